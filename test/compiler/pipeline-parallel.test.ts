import { describe, expect, it } from "vitest";
import { type AnyStateMachine, createActor, type InspectionEvent, toPromise } from "xstate";
import type { PipelineContext } from "../../src/compiler/pipeline-context.js";
import { decideGroup, tallyOf } from "../../src/compiler/pipeline-parallel.js";
import type { JoinPolicy, PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { startRun } from "../../src/runtime/run.js";
import { compileRunMachine } from "../../src/runtime/run-machine.js";
import { contextAsTables } from "../../src/runtime/snapshot-shape.js";
import { code, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

/** `start` fans out to `n` code siblings that end at once, `failing` of them with `fail`. */
function group(n: number, policy: JoinPolicy, failing: readonly string[] = []): PipelineDefinition {
  const siblings = Array.from({ length: n }, (_, i) => `sibling-${i + 1}`);
  return pipelineOf({
    stages: [
      code("start", () => ({ verdict: "ok" })),
      ...siblings.map((id) =>
        code(id, () => ({ verdict: failing.includes(id) ? ("fail" as const) : ("ok" as const) })),
      ),
      code("join", () => ({ verdict: "ok" })),
    ],
    next: {
      start: { kind: "parallel", siblings, join: "join", policy, maxConcurrency: 4 },
    },
  });
}

/** Counts every read of the group's sibling list (an element, its length, an iteration). */
function countSiblingReads(pipeline: PipelineDefinition): () => number {
  const fanOut = pipeline.next.start;
  if (fanOut?.kind !== "parallel") throw new Error("no group");
  let reads = 0;
  fanOut.siblings = new Proxy(fanOut.siblings, {
    get(target, key, receiver) {
      reads += 1;
      return Reflect.get(target, key, receiver);
    },
  });
  return () => reads;
}

/**
 * The work the run's machine does per sibling: guard evaluations, and the states XState holds
 * active (and rebuilds the state value of) at each of the root's steps, summed over the run.
 */
async function workPerSibling(n: number): Promise<{ guards: number; activeStates: number }> {
  const machine = compileRunMachine(group(n, { kind: "all-settled" }), harness("stages: {}").host);
  let guards = 0;
  const counted = Object.fromEntries(
    Object.entries(machine.implementations.guards).map(([name, guard]) => [
      name,
      (...args: unknown[]) => {
        guards += 1;
        return (guard as (...a: unknown[]) => boolean)(...args);
      },
    ]),
  );
  let activeStates = 0;
  const actor = createActor(machine.provide({ guards: counted }) as AnyStateMachine, {
    input: { runId: "run-work", ctx: {} },
    inspect: (event: InspectionEvent) => {
      if (event.type === "@xstate.snapshot" && event.actorRef === actor)
        activeStates += leavesOf((event.snapshot as unknown as { value: unknown }).value);
    },
  });
  actor.start();
  const output = await toPromise(actor);
  expect(Object.keys(output.results)).toHaveLength(n + 2);
  return { guards: guards / n, activeStates: activeStates / n };
}

const leavesOf = (value: unknown): number =>
  typeof value === "string"
    ? 1
    : Object.values(value as Record<string, unknown>).reduce<number>(
        (sum, v) => sum + leavesOf(v),
        0,
      );

async function run(pipeline: PipelineDefinition) {
  const handle = await startRun(pipeline, { host: harness("stages: {}").host, runId: "run-group" });
  if (!handle.ok) throw handle.error;
  return handle.value.result;
}

describe("a parallel group", () => {
  it("decides from counts kept as siblings settle: twice the siblings, twice the sibling reads", async () => {
    const readsRunning = async (n: number) => {
      const pipeline = group(n, { kind: "all-settled" });
      const reads = countSiblingReads(pipeline);
      const result = await run(pipeline);
      expect(Object.keys(result.results)).toHaveLength(n + 2);
      return reads();
    };
    const at16 = await readsRunning(16);
    const at32 = await readsRunning(32);
    expect(at32).toBeLessThanOrEqual(2 * at16 + 8);
  });

  it("costs the same per sibling at 10 siblings as at 200: guards evaluated, states held active", async () => {
    const small = await workPerSibling(10);
    const large = await workPerSibling(200);
    // A few steps' fixed cost (entering and leaving the group) spread over fewer siblings.
    expect(large.guards).toBeLessThanOrEqual(small.guards);
    expect(large.activeStates).toBeLessThanOrEqual(small.activeStates);
  });

  it("still fails fast on a failing sibling and joins once all succeed", async () => {
    const failed = await run(group(12, { kind: "fail-fast" }, ["sibling-7"]));
    expect(failed.status).toBe("failed");
    expect(failed.error?.code).toBe("ExtensionHost/ParallelSiblingFailure");
    const joined = await run(group(12, { kind: "quorum", k: 10 }, ["sibling-2", "sibling-9"]));
    expect(joined.status).toBe("done");
    expect(joined.results.join?.verdict).toBe("ok");
  });
});

describe("a group's tally", () => {
  it("is counted from the siblings' states when a snapshot stored before tallies were kept is resumed", () => {
    // As stored then (plain objects by stage id), and as a restore reads it (in tables).
    const stored = {
      context: {
        groups: { start: { a: "settled", b: "settled", c: "running", d: "queued" } },
        results: {
          a: { stageId: "a", verdict: "ok" },
          b: { stageId: "b", verdict: "fail" },
        },
      },
    };
    const { context } = contextAsTables(stored) as { context: PipelineContext };
    const tally = tallyOf(context, "start");
    expect(tally).toEqual({ siblings: 4, started: 3, running: 1, ok: 1, failed: 1 });
    expect(decideGroup({ kind: "fail-fast" }, tally)).toBe("fail");
    expect(decideGroup({ kind: "any" }, tally)).toBe("join");
    expect(decideGroup({ kind: "quorum", k: 3 }, tally)).toBeUndefined();
    expect(decideGroup({ kind: "quorum", k: 4 }, tally)).toBe("fail");
  });
});
