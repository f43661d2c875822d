import { describe, expect, it } from "vitest";
import { type AnyStateMachine, createActor, type InspectionEvent, toPromise } from "xstate";
import type { PipelineContext } from "../../src/compiler/pipeline-context.js";
import type { JsonValue, StageResult } from "../../src/definitions/contract.js";
import type { JoinPolicy, PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { startRun } from "../../src/runtime/run.js";
import { compileRunMachine } from "../../src/runtime/run-machine.js";
import { code, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

/**
 * `list` produces `files`; `review` runs once per file (failing on the files named in `failing`),
 * and `join` receives what they ended with.
 */
function mapPipeline(
  files: JsonValue,
  options: {
    policy?: JoinPolicy;
    failing?: readonly string[];
    maxConcurrency?: number;
    maxItems?: number;
    seen?: { item: unknown; itemIndex: unknown; file: unknown; running: number }[];
    upstream?: StageResult[][];
  } = {},
): PipelineDefinition {
  let running = 0;
  return pipelineOf({
    stages: [
      code("list", () => ({ verdict: "ok", output: { files } })),
      code("review", async ({ ctx }) => {
        running += 1;
        options.seen?.push({ item: ctx.item, itemIndex: ctx.itemIndex, file: ctx.file, running });
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
        const failed = options.failing?.includes(String(ctx.item));
        return failed
          ? { verdict: "fail", reason: `${String(ctx.item)} is wrong` }
          : { verdict: "ok", output: { reviewed: ctx.item as string } };
      }),
      code("join", ({ ctx: { upstream } }) => {
        options.upstream?.push([...upstream]);
        return { verdict: "ok", output: { reviews: upstream.length } };
      }),
    ],
    next: {
      list: {
        kind: "map",
        over: "output.files",
        stage: "review",
        as: "file",
        join: "join",
        policy: options.policy ?? { kind: "fail-fast" },
        ...(options.maxConcurrency !== undefined && { maxConcurrency: options.maxConcurrency }),
        ...(options.maxItems !== undefined && { maxItems: options.maxItems }),
      },
    },
  });
}

async function run(pipeline: PipelineDefinition) {
  const handle = await startRun(pipeline, { host: harness("stages: {}").host, runId: "run-map" });
  if (!handle.ok) throw handle.error;
  return handle.value.result;
}

describe("a map group", () => {
  it("runs its stage once per item, the item in ctx, and joins the results in list order", async () => {
    const seen: { item: unknown; itemIndex: unknown; file: unknown; running: number }[] = [];
    const upstream: StageResult[][] = [];
    const result = await run(
      mapPipeline(["a.ts", "b.ts", "c.ts"], { seen, upstream, maxConcurrency: 2 }),
    );
    expect(result.status).toBe("done");
    expect(seen.map(({ item, itemIndex, file }) => [item, itemIndex, file])).toEqual([
      ["a.ts", 0, "a.ts"],
      ["b.ts", 1, "b.ts"],
      ["c.ts", 2, "c.ts"],
    ]);
    expect(Math.max(...seen.map((s) => s.running))).toBe(2);
    expect(upstream[0]?.map((r) => r.output)).toEqual([
      { reviewed: "a.ts" },
      { reviewed: "b.ts" },
      { reviewed: "c.ts" },
    ]);
    expect(upstream[0]?.map((r) => r.stageExecutionId)).toEqual([
      "run-map/review[0]/1",
      "run-map/review[1]/1",
      "run-map/review[2]/1",
    ]);
    expect(result.results.join?.output).toEqual({ reviews: 3 });
  });

  it("records how many items it was entered with in its SMTransition", async () => {
    const { host, audit } = harness("stages: {}");
    const handle = await startRun(mapPipeline(["a.ts", "b.ts"]), { host, runId: "run-map" });
    if (!handle.ok) throw handle.error;
    await handle.value.result;
    const entered = audit.events.find((e) => e.type === "SMTransition" && e.payload.kind === "map");
    expect(entered?.payload).toMatchObject({ from: "list", to: ["review"], items: 2 });
  });

  it("goes straight to its join with an empty list, whatever its policy", async () => {
    for (const policy of [{ kind: "any" }, { kind: "quorum", k: 2 }] as JoinPolicy[]) {
      const upstream: StageResult[][] = [];
      const result = await run(mapPipeline([], { policy, upstream }));
      expect(result.status).toBe("done");
      expect(upstream).toEqual([[]]);
    }
  });

  it("fails fast on a failing item, and settles them all under all-settled", async () => {
    const failed = await run(mapPipeline(["a", "b", "c"], { failing: ["b"] }));
    expect(failed.status).toBe("failed");
    expect(failed.error?.code).toBe("ExtensionHost/ParallelSiblingFailure");
    expect(failed.error?.message).toContain("review[1]");
    const upstream: StageResult[][] = [];
    const settled = await run(
      mapPipeline(["a", "b", "c"], { failing: ["b"], policy: { kind: "all-settled" }, upstream }),
    );
    expect(settled.status).toBe("done");
    expect(upstream[0]?.map((r) => r.verdict)).toEqual(["ok", "fail", "ok"]);
  });

  it("joins under any once one item succeeds, and under quorum once k do", async () => {
    const any = await run(
      mapPipeline(["a", "b"], { failing: ["a"], policy: { kind: "any" }, maxConcurrency: 1 }),
    );
    expect(any.status).toBe("done");
    const allFail = await run(
      mapPipeline(["a", "b"], { failing: ["a", "b"], policy: { kind: "any" } }),
    );
    expect(allFail.error?.code).toBe("ExtensionHost/ParallelPolicyUnmet");
    const short = await run(mapPipeline(["a"], { policy: { kind: "quorum", k: 2 } }));
    expect(short.error?.code).toBe("ExtensionHost/ParallelPolicyUnmet");
    const met = await run(
      mapPipeline(["a", "b", "c"], { failing: ["c"], policy: { kind: "quorum", k: 2 } }),
    );
    expect(met.status).toBe("done");
  });

  it("refuses a list longer than maxItems, and a path that holds no list, with coded errors", async () => {
    const long = await run(mapPipeline(["a", "b", "c"], { maxItems: 2 }));
    expect(long.status).toBe("failed");
    expect(long.error?.code).toBe("Validation/MapTooManyItems");
    expect(long.error?.message).toContain("3 items");
    const byDefault = await run(mapPipeline(Array.from({ length: 1001 }, (_, i) => i)));
    expect(byDefault.error?.code).toBe("Validation/MapTooManyItems");
    const notAList = await run(mapPipeline("a.ts"));
    expect(notAList.error?.code).toBe("Validation/MapOverNotList");
    expect(notAList.error?.message).toContain("holds string");
  });
});

/** A table's buckets, as JSON writes them. */
const bucketsOf = (table: unknown): Record<string, Record<string, unknown>> =>
  ((table as { toJSON?: () => unknown }).toJSON?.() ?? table) as Record<
    string,
    Record<string, unknown>
  >;

/** How many entries the buckets of `after` that are not `before`'s hold: what a step copied. */
function copiedEntries(before: unknown, after: unknown): number {
  const was = bucketsOf(before ?? {});
  return Object.entries(bucketsOf(after ?? {}))
    .filter(([key, bucket]) => was[key] !== bucket)
    .reduce((sum, [, bucket]) => sum + Object.keys(bucket).length, 0);
}

describe("a map group of 1,000 items", () => {
  it("copies a bounded number of per-item entries at each step after it is entered", async () => {
    const items = 1000;
    const pipeline = pipelineOf({
      stages: [
        code("list", () => ({
          verdict: "ok",
          output: { files: Array.from({ length: items }, (_, i) => `f${i}`) },
        })),
        code("review", ({ ctx }) => ({ verdict: "ok", output: { reviewed: ctx.item as string } })),
        code("join", () => ({ verdict: "ok" })),
      ],
      next: {
        list: {
          kind: "map",
          over: "output.files",
          stage: "review",
          join: "join",
          policy: { kind: "all-settled" },
          maxConcurrency: 8,
        },
      },
    });
    const machine = compileRunMachine(pipeline, harness("stages: {}").host);
    const steps: PipelineContext[] = [];
    const actor = createActor(machine as AnyStateMachine, {
      input: { runId: "run-1000", ctx: {} },
      inspect: (event: InspectionEvent) => {
        if (event.type === "@xstate.snapshot" && event.actorRef === actor)
          steps.push((event.snapshot as unknown as { context: PipelineContext }).context);
      },
    });
    actor.start();
    const output = await toPromise(actor);
    expect(output.status).toBe("done");
    expect(Object.keys(output.results)).toHaveLength(items + 2);
    const tables = (context: PipelineContext) => [
      context.visits,
      context.results,
      context.upstreamOf,
      context.groups.list,
    ];
    const entered = steps.findIndex((context) => context.groups.list !== undefined);
    let most = 0;
    let total = 0;
    for (let i = entered + 1; i < steps.length; i++) {
      const before = tables(steps[i - 1] as PipelineContext);
      const after = tables(steps[i] as PipelineContext);
      const copied = after.reduce<number>(
        (sum, table, t) => sum + copiedEntries(before[t], table),
        0,
      );
      most = Math.max(most, copied);
      total += copied;
    }
    // A plain object per table would copy up to 4 × 1,000 entries at each step.
    expect(most).toBeLessThanOrEqual(4 * ((3 * items) / 64));
    // Each item is entered and settled in a bounded number of steps.
    expect(steps.length - entered).toBeLessThanOrEqual(3 * items);
    expect(total / items).toBeLessThanOrEqual(3 * 4 * ((3 * items) / 64));
  });
});
