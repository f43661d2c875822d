import { type AnyStateMachine, createActor } from "xstate";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { controlEventOf, stageDone } from "./events.js";
import { modelMachine } from "./model.js";
import { resultFor } from "./outcomes.js";
import type { PathList, PathStep, PipelinePath } from "./paths.js";
import { edgeRecorder, type OutcomeFinder, outcomeFinder } from "./run-path.js";

/** The graph transitions (coverage keys) a path takes on the model (one compiled machine for many paths). */
export function modelledTransitions(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  steps: readonly PathStep[],
  outcomeOf: OutcomeFinder = outcomeFinder(pipeline),
  machine: AnyStateMachine = modelMachine(pipeline),
): string[] {
  const covered = new Set<string>();
  const actor = createActor(machine, {
    input: { runId: "model", ctx },
    inspect: edgeRecorder(covered),
  }).start();
  for (const step of steps) {
    const outcome = outcomeOf(step);
    const event =
      controlEventOf(step.outcome) ??
      (outcome && !outcome.suspends ? stageDone(step.stage, resultFor(outcome)) : undefined);
    if (!event) break;
    actor.send(event as never);
  }
  actor.stop();
  return [...covered];
}

/**
 * A few of the listed paths that together take every transition all of them take, picked
 * greedily (each time the path taking the most transitions not yet taken, the shorter on a tie):
 * for a pipeline whose paths are too many to drive, each one of its transitions still driven once.
 */
export function coveringPaths(pipeline: PipelineDefinition, list: PathList): PathList {
  const outcomeOf = outcomeFinder(pipeline);
  const machine = modelMachine(pipeline);
  let left = list.paths.map((path) => ({
    path,
    takes: new Set(modelledTransitions(pipeline, list.ctx, path.steps, outcomeOf, machine)),
  }));
  const taken = new Set<string>();
  const chosen: PipelinePath[] = [];
  for (;;) {
    const gain = (takes: Set<string>) => [...takes].filter((t) => !taken.has(t)).length;
    const best = left.reduce<(typeof left)[number] | undefined>((top, candidate) => {
      if (!top) return candidate;
      const [a, b] = [gain(candidate.takes), gain(top.takes)];
      return a > b || (a === b && candidate.path.steps.length < top.path.steps.length)
        ? candidate
        : top;
    }, undefined);
    if (!best || gain(best.takes) === 0) break;
    chosen.push(best.path);
    for (const t of best.takes) taken.add(t);
    left = left.filter((candidate) => candidate !== best);
  }
  return { ...list, paths: chosen };
}
