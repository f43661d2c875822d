import { describe, expect, it } from "vitest";
import type { JoinPolicy } from "../../src/definitions/pipeline-types.js";
import { loadPipelineFile } from "../../src/index.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { fanOutPipeline } from "../support/pipelines.js";

const bundled = async (name: string) => {
  const loaded = await loadPipelineFile(`machines/${name}.yaml`);
  if (!loaded.ok) throw new Error(`${name} does not load`);
  return loaded.value;
};
const spell = (steps: { stage: string; outcome: string }[]) =>
  steps.map((s) => `${s.stage}:${s.outcome}`).join(" > ");

/** plan, then execute (whose prompt reads the plan) fans out to test and lint under `policy`, then review. */
const fanOut = (policy: JoinPolicy, maxConcurrency?: number) =>
  fanOutPipeline(policy, { maxConcurrency });
const groupRuns = (policy: JoinPolicy, maxConcurrency?: number) =>
  pipelinePaths(fanOut(policy, maxConcurrency), { strategy: "simple" })
    .paths.filter((p) => p.end !== "suspended")
    .map((p) => `${spell(p.steps.slice(2))} => ${p.end}`);

describe("pipelinePaths", () => {
  it("refuses a walk past its limit with Validation/PathLimitExceeded and what to lower, not an internal error", async () => {
    const pipeline = await bundled("code-review");
    const walk = () =>
      pipelinePaths(pipeline, { events: ["override", "redo", "cancel"], maxStates: 50 });
    expect(walk).toThrow(
      expect.objectContaining({
        code: "Validation/PathLimitExceeded",
        message: expect.stringContaining("more than 50 states"),
      }),
    );
    expect(walk).toThrow(/lower --max-visits or name fewer --events/);
  });

  it("finds, in code-review-parallel, a fail-fast sibling failure ending failed and a path ending done", async () => {
    const { paths } = pipelinePaths(await bundled("code-review-parallel"));
    const spelled = paths.map((p) => `${spell(p.steps)} => ${p.end}`);
    expect(spelled).toContain("plan:ok > execute:ok > test:retries-exhausted => failed");
    expect(spelled).toContain(
      "plan:ok > execute:ok > test:ok > lint:ok > review:ok: output.approved equals true => done",
    );
  });

  it("bounds the review loop by the pipeline's own visits rule, and ends every path", async () => {
    const { paths } = pipelinePaths(await bundled("code-review"));
    const reviews = paths.map((p) => p.steps.filter((s) => s.stage === "review").length);
    expect(Math.max(...reviews)).toBe(3);
    expect(new Set(paths.map((p) => p.end))).toEqual(new Set(["done", "failed", "suspended"]));
  });

  it("under fail-fast, tells apart which sibling fails first; the other never settles", () => {
    const runs = groupRuns({ kind: "fail-fast" });
    expect(runs).toContain("test:retries-exhausted => failed");
    expect(runs).toContain("lint:retries-exhausted => failed");
    expect(runs).toContain("test:ok > lint:retries-exhausted => failed");
    expect(runs).not.toContain("test:retries-exhausted > lint:ok => failed");
  });

  it("under all-settled, waits for every sibling and joins whatever they end with", () => {
    const runs = groupRuns({ kind: "all-settled" });
    expect(runs).toContain("test:ok > lint:ok > review:cap-hit => failed");
  });

  it("under all-settled, tells apart a join after a failed sibling from one after an ok sibling", () => {
    // review's inputsSchema takes only ok or skip results: after a failed sibling it fails in Setup.
    const runs = groupRuns({ kind: "all-settled" }, 1);
    expect(runs).toContain("test:retries-exhausted > lint:ok > review:inputs-refused => failed");
    expect(runs).toContain("test:ok > lint:ok > review:ok => done");
    expect(
      runs.filter((r) => r.startsWith("test:retries-exhausted > lint:ok > review:ok")),
    ).toEqual([]);
  });

  it("under any, joins on the first ok and fails only when every sibling failed", () => {
    const runs = groupRuns({ kind: "any" });
    expect(runs.some((r) => r.startsWith("lint:ok > review:ok"))).toBe(true);
    expect(runs).toContain("test:retries-exhausted > lint:retries-exhausted => failed");
  });

  it("under quorum 2 of 2, fails on the first failure", () => {
    const runs = groupRuns({ kind: "quorum", k: 2 });
    expect(runs).toContain("lint:retries-exhausted => failed");
    expect(runs.some((r) => r.startsWith("test:ok > lint:ok > review:ok"))).toBe(true);
  });

  it("with maxConcurrency 1, runs the siblings in declared order", () => {
    const runs = groupRuns({ kind: "all-settled" }, 1);
    expect(runs.some((r) => r.startsWith("test:ok > lint:"))).toBe(true);
    expect(runs.some((r) => r.startsWith("lint:"))).toBe(false);
  });

  it("adds bounded control events on request: OVERRIDE, REDO and CANCEL", async () => {
    const pipeline = await bundled("code-review");
    const { paths } = pipelinePaths(pipeline, { events: ["override", "redo", "cancel"] });
    const outcomes = new Set(paths.flatMap((p) => p.steps.map((s) => s.outcome)));
    expect(outcomes).toContain("CANCEL");
    expect(outcomes).toContain("OVERRIDE execute");
    expect(outcomes).toContain("REDO plan");
    expect(paths.filter((p) => p.end === "cancelled").length).toBeGreaterThan(0);
  });
});
