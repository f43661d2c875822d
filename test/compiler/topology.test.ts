import { describe, expect, it } from "vitest";
import type { AnyStateNode } from "xstate";
import { compilePipelineMachine } from "../../src/compiler/pipeline-machine.js";
import { mayOverride, mayRedo } from "../../src/compiler/topology.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { code, pipelineOf } from "../support/pipelines.js";

const ok = () => ({ verdict: "ok" as const });

/** `n` code stages in a chain, each one's rules leading to the next. */
const chain = (n: number): PipelineDefinition => {
  const ids = Array.from({ length: n }, (_, i) => `step-${i + 1}`);
  return pipelineOf({
    id: "chain",
    stages: ids.map((id) => code(id, ok)),
    next: Object.fromEntries(ids.slice(0, -1).map((id, i) => [id, ids[i + 1] as string])),
  });
};

/** Counts every read of a stage's transition (`pipeline.next[id]`) from now on. */
function countTransitionReads(pipeline: PipelineDefinition): () => number {
  let reads = 0;
  pipeline.next = new Proxy(pipeline.next, {
    get(target, key, receiver) {
      if (typeof key === "string") reads += 1;
      return Reflect.get(target, key, receiver);
    },
  });
  return () => reads;
}

const transitionsOf = (node: AnyStateNode): number =>
  [...node.transitions.values()].reduce((sum, list) => sum + list.length, 0) +
  (node.always?.length ?? 0) +
  Object.values(node.states).reduce((sum, child) => sum + transitionsOf(child), 0);

describe("compiling a pipeline", () => {
  const readsCompiling = (n: number): number => {
    const pipeline = chain(n);
    const reads = countTransitionReads(pipeline);
    compilePipelineMachine(pipeline);
    return reads();
  };

  it("reads each stage's transition a bounded number of times: twice the stages, twice the reads", () => {
    expect(readsCompiling(200)).toBeLessThanOrEqual(2 * readsCompiling(100) + 2);
  });

  it("gives the machine a number of transitions linear in the stages (control events included)", () => {
    const at100 = transitionsOf(compilePipelineMachine(chain(100)).root);
    const at200 = transitionsOf(compilePipelineMachine(chain(200)).root);
    expect(at200).toBeLessThanOrEqual(2 * at100 + 4);
  });
});

describe("the control events a stage takes", () => {
  it("OVERRIDE goes forward to a stage a rule leads to; REDO goes back to a stage that led here", () => {
    const pipeline = chain(4);
    expect(mayOverride(pipeline, "step-2", "step-4")).toBe(true);
    expect(mayOverride(pipeline, "step-2", "step-1")).toBe(false);
    expect(mayRedo(pipeline, "step-3", "step-1")).toBe(true);
    expect(mayRedo(pipeline, "step-3", "step-3")).toBe(true);
    expect(mayRedo(pipeline, "step-1", "step-3")).toBe(false);
  });

  it("asks the topology about the stage the run is at only, so a long chain walks it once per stage asked", () => {
    const pipeline = chain(300);
    const reads = countTransitionReads(pipeline);
    for (let i = 0; i < 5; i++) mayRedo(pipeline, "step-300", "step-1");
    expect(reads()).toBeLessThanOrEqual(2 * 300);
  });
});
