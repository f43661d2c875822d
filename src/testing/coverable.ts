import { toDirectedGraph } from "xstate/graph";
import { graphJson, type JsonNode } from "../compiler/graph.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { edgeKey } from "./edge-key.js";
import { modelMachine } from "./model.js";

/** Control events and crashes are not behaviour a pipeline declares: coverage leaves them out. */
const NOT_COUNTED = /^(OVERRIDE|REDO|CANCEL|xstate\.error\.actor\..*)$/;

/**
 * Every transition of `graph --format json` that coverage counts (stage to stage, to the ends, a
 * group's), as edge keys (`source -> target [event: description]`).
 */
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

/** Whether a transition is taken by a control event (`OVERRIDE`, `REDO`, `CANCEL`), by its edge key. */
export const isControlTransition = (transition: string): boolean =>
  /\[(OVERRIDE|REDO|CANCEL)\]$/.test(transition);
