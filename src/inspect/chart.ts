import type { ElkNode } from "elkjs/lib/elk-api.js";
import { type AnyStateMachine, createMachine } from "xstate";
import { type DirectedGraphNode, toDirectedGraph } from "xstate/graph";
import { collectEdges } from "../compiler/graph.js";
import { groupDescriptions } from "../compiler/group-description.js";
import { compiledPipeline } from "../compiler/pipeline-machine.js";
import { createStageMachine } from "../compiler/stage-machine.js";
import type { StageServices } from "../compiler/stage-services-port.js";
import type { PipelineDefinition, PipelineStage } from "../definitions/pipeline-types.js";
import { descriptionOf } from "../definitions/stage-descriptions.js";

/** A chart laid out both ways by the server (chart-layout.ts): the page keeps the better fit. */
export interface ChartLayouts {
  right: ElkNode;
  down: ElkNode;
}

/**
 * One drawn state of a statechart, its children nested (what the visualizer lays out); or, inside
 * a parallel group's state, one of the siblings it spawns (`type: "sibling"`), which the run
 * machine keeps in its context rather than as a state.
 */
export interface ChartNode {
  /** The state's full id, `pipeline.plan`; a sibling's is its group's and its own, `pipeline.group.lint`. */
  id: string;
  key: string;
  type: "atomic" | "compound" | "parallel" | "final" | "history" | "sibling";
  /** The stage this state runs, when it runs one (a stage state, or a group's sibling). */
  stage?: string;
  /** What that stage is: a model's (`llm`), code, a command, a person's answer (`ask`) or a sub-pipeline. */
  kind?: PipelineStage["kind"];
  /**
   * A parallel group's state: its name as users see it (its siblings, `test ∥ lint`), its policy
   * (`fail-fast`, `quorum 2`) and how many siblings run at once.
   */
  /** A map group's one sibling: the lane each of its items runs in, drawn once with their count. */
  lane?: true;
  group?: {
    name: string;
    policy: string;
    maxConcurrency: number;
    /** A map group's list: its one sibling is the lane each item runs in. */
    map?: { over: string; maxItems: number };
  };
  /** What the stage is for, from its definition (its `description`). */
  description?: string;
  /** A sub-pipeline stage: the sub-pipeline's own chart, drawn inside the stage. */
  sub?: Chart;
  initial?: string;
  children: ChartNode[];
}

export interface ChartEdge {
  source: string;
  target: string;
  label: string;
  /**
   * What the chart does not draw as a line of its own: `failure`, a stage's failing or crashing
   * into `failed` (every stage has one; the chart marks the stage instead), and `internal`, a
   * group's state taking its siblings' settling (its transition back to itself).
   */
  role?: "failure" | "internal";
}

/** A statechart as drawn: the nested states and every transition between them. */
export interface Chart {
  root: ChartNode;
  edges: ChartEdge[];
}

/** The chart of any XState machine. */
export function chartOf(machine: AnyStateMachine, stages: ReadonlySet<string> = new Set()): Chart {
  const graph = toDirectedGraph(machine);
  return { root: nodeOf(graph, stages, true), edges: collectEdges(graph) };
}

function nodeOf(
  node: DirectedGraphNode,
  stages: ReadonlySet<string>,
  stageLevel: boolean,
): ChartNode {
  const { stateNode } = node;
  const isStage = stageLevel && stages.has(stateNode.key);
  // Stages are the pipeline's top-level states.
  const childrenAreStages = node.id === stateNode.machine.id;
  const initial = stateNode.initial?.target?.[0]?.id;
  return {
    id: node.id,
    key: stateNode.key,
    type: stateNode.type,
    ...(isStage && { stage: stateNode.key }),
    ...(initial && { initial }),
    children: node.children.map((child) => nodeOf(child, stages, childrenAreStages)),
  };
}

/**
 * A compiled pipeline's chart: the states and transitions of the machine its runs execute, each
 * parallel group's state holding the siblings it spawns, each sub-pipeline's chart nested in its
 * stage.
 */
export function pipelineChart(pipeline: PipelineDefinition): Chart {
  const chart = chartOf(compiledPipeline(pipeline), new Set(Object.keys(pipeline.stages)));
  const groups = groupDescriptions(pipeline);
  chart.edges = chart.edges.flatMap((edge) => withRoles(edge, chart.root.id, groups));
  for (const node of chart.root.children) {
    const group = groups.get(node.key);
    if (!group) continue;
    node.group = {
      name: group.name,
      policy: group.policy,
      maxConcurrency: group.maxConcurrency,
      ...(group.map && { map: group.map }),
    };
    node.children = group.siblings.map((sibling) => ({
      id: `${node.id}.${sibling}`,
      key: sibling,
      type: "sibling",
      stage: sibling,
      ...(group.map && { lane: true }),
      children: [],
    }));
  }
  const nest = (node: ChartNode): void => {
    const stage = node.stage ? pipeline.stages[node.stage] : undefined;
    const description = stage && descriptionOf(stage);
    if (stage) node.kind = stage.kind;
    if (description !== undefined) node.description = description;
    if (stage?.kind === "pipeline") node.sub = pipelineChart(stage.pipeline);
    node.children.forEach(nest);
  };
  nest(chart.root);
  return chart;
}

/** What a transition into `failed` stands for when the stage failed, crashed or its group's policy failed. */
const FAILING = /^(failed|crashed|.+ policy failed)$/;

/**
 * An edge with the part of it the chart draws apart: a stage's implicit way into `failed` (its
 * own rules' ways there stay an edge), and a group's state settling back into itself. The
 * merged label (`otherwise / failed / crashed`) is split, so every transition is still there.
 */
function withRoles(
  edge: ChartEdge,
  rootId: string,
  groups: ReadonlyMap<string, unknown>,
): ChartEdge[] {
  if (edge.source === edge.target && groups.has(edge.source.slice(rootId.length + 1)))
    return [{ ...edge, role: "internal" }];
  if (edge.target !== `${rootId}.failed`) return [edge];
  const parts = edge.label.split(" / ");
  const failing = parts.filter((part) => FAILING.test(part));
  const rest = parts.filter((part) => !FAILING.test(part));
  return [
    ...(rest.length ? [{ ...edge, label: rest.join(" / ") }] : []),
    ...(failing.length ? [{ ...edge, label: failing.join(" / "), role: "failure" as const }] : []),
  ];
}

/** The stage lifecycle, Setup → Init → CheckGate → Act → Assert → Exit, drawn from its machine. */
export function lifecycleChart(): Chart {
  // Only the configuration is drawn: no service is ever called.
  return chartOf(createStageMachine({} as StageServices));
}

/**
 * The chart of a machine definition another XState app sent over the inspection stream (a JSON
 * config): its named actions, guards and actors are only names here, nothing runs.
 */
export function chartOfDefinition(definition: string): Chart {
  return chartOf(createMachine(JSON.parse(definition)));
}
