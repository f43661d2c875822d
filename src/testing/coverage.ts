import { toDirectedGraph } from "xstate/graph";
import { graphJson, type JsonNode } from "../compiler/graph.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { modelMachine } from "./model.js";
import { stageOutcomes } from "./outcomes.js";
import { edgeKey } from "./run-path.js";

/** Control events and crashes are not behaviour a pipeline declares: coverage leaves them out. */
const NOT_COUNTED = /^(OVERRIDE|REDO|CANCEL|xstate\.error\.actor\..*)$/;

export interface Uncovered {
  transition: string;
  reason: string;
}

export interface Coverage {
  transitions: { covered: number; total: number; uncovered: Uncovered[] };
}

/** Every stage-to-stage and stage-to-terminal transition of `graph --format json`, as edge keys. */
export function graphTransitions(pipeline: PipelineDefinition): string[] {
  const edges = (node: JsonNode): string[] => [
    ...node.edges
      .filter((edge) => !NOT_COUNTED.test(edge.label.text))
      .map((edge) =>
        edgeKey(
          edge.source,
          edge.target,
          edge.label.text === "always" ? "" : edge.label.text,
          edge.description,
        ),
      ),
    ...node.children.flatMap(edges),
  ];
  return [...new Set(edges(graphJson(toDirectedGraph(modelMachine(pipeline)))))];
}

/**
 * Which graph transitions the real runs took; each one they did not, with why: the model's
 * paths never take it (a condition the completionSchema rules out, or unreachable), or the
 * path that takes it failed.
 */
export function transitionCoverage(
  pipeline: PipelineDefinition,
  runs: readonly { covered: readonly string[]; modelled: readonly string[] }[],
): Coverage {
  const all = graphTransitions(pipeline);
  const covered = new Set(runs.flatMap((run) => run.covered));
  const modelled = new Set(runs.flatMap((run) => run.modelled));
  const uncovered = all
    .filter((transition) => !covered.has(transition))
    .map((transition) => ({ transition, reason: whyUncovered(pipeline, transition, modelled) }));
  return { transitions: { covered: all.length - uncovered.length, total: all.length, uncovered } };
}

function whyUncovered(
  pipeline: PipelineDefinition,
  transition: string,
  modelled: Set<string>,
): string {
  if (modelled.has(transition)) return "its path failed";
  const stage = /\[xstate\.done\.actor\.([^:\]]+)/.exec(transition)?.[1];
  const unsatisfiable =
    stage && stage in pipeline.stages ? stageOutcomes(pipeline, stage).unsatisfiable : [];
  if (unsatisfiable.length > 0)
    return `condition unsatisfiable under the schema: ${unsatisfiable.map((u) => u.reason).join("; ")}`;
  return "unreachable";
}
