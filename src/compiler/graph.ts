import type { AnyStateMachine } from "xstate";
import { type DirectedGraphEdge, type DirectedGraphNode, toDirectedGraph } from "xstate/graph";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { stageDescriptions } from "../definitions/stage-descriptions.js";
import { type GroupDescription, groupDescriptions } from "./group-description.js";

/** How `stagechart graph` draws a compiled pipeline. */
export const GRAPH_FORMATS = ["mermaid", "dot", "json"] as const;
export type GraphFormat = (typeof GRAPH_FORMATS)[number];

/** Control events reach many states; drawing them would hide the pipeline's own topology. */
const CONTROL_EVENTS = new Set(["OVERRIDE", "REDO", "CANCEL"]);

export interface Edge {
  source: string;
  target: string;
  label: string;
}

/**
 * Draws a compiled machine from `xstate/graph`'s directed graph: nested states drawn nested, each
 * transition as the machine has it. Given the pipeline it was compiled from (`compiledPipeline`),
 * its stages' descriptions go on their nodes and each parallel group's state names the siblings
 * it spawns, its join and its policy.
 */
export function renderGraph(
  machine: AnyStateMachine,
  format: GraphFormat,
  pipeline?: PipelineDefinition,
): string {
  const root = toDirectedGraph(machine);
  const notes = pipeline ? notesOf(pipeline) : NO_NOTES;
  if (format === "json") return `${JSON.stringify(graphJson(root, notes), null, 2)}\n`;
  const edges = collectEdges(root);
  return format === "mermaid" ? mermaid(root, edges, notes) : dot(root, edges, notes);
}

/** What the definition adds to the drawn machine: stages' descriptions, groups' siblings. */
export interface GraphNotes {
  /** By stage id. */
  descriptions: ReadonlyMap<string, string>;
  /** By the key of a group's state. */
  groups: ReadonlyMap<string, GroupDescription>;
}

const NO_NOTES: GraphNotes = { descriptions: new Map(), groups: new Map() };

export function notesOf(pipeline: PipelineDefinition): GraphNotes {
  return { descriptions: stageDescriptions(pipeline), groups: groupDescriptions(pipeline) };
}

/** A group's state as Mermaid and DOT label it: `execute_parallel ∥ test, lint (fail-fast)`. */
function labelOfState(node: DirectedGraphNode, notes: GraphNotes): string {
  const group = isTopLevel(node) ? notes.groups.get(node.stateNode.key) : undefined;
  return group
    ? `${node.stateNode.key} ∥ ${group.siblings.join(", ")} (${describeGroup(group)})`
    : node.stateNode.key;
}

const describeGroup = (group: GroupDescription): string =>
  group.maxConcurrency < (group.map?.maxItems ?? group.siblings.length)
    ? `${group.policy}, ${group.maxConcurrency} at once`
    : group.policy;

const isTopLevel = (node: DirectedGraphNode): boolean =>
  node.stateNode.parent !== undefined && node.stateNode.parent === node.stateNode.machine.root;

/** Every drawn transition, eventless ones included; parallel edges between two states merged. */
export function collectEdges(node: DirectedGraphNode): Edge[] {
  const merged = new Map<string, Edge>();
  const add = (source: string, target: string, label: string) => {
    const key = `${source}->${target}`;
    const known = merged.get(key);
    if (!known) merged.set(key, { source, target, label });
    else if (!known.label.split(" / ").includes(label)) known.label += ` / ${label}`;
  };
  const visit = (current: DirectedGraphNode) => {
    for (const edge of current.edges) {
      if (!CONTROL_EVENTS.has(edge.transition.eventType))
        add(edge.source.id, edge.target.id, labelOf(edge.transition));
    }
    for (const transition of current.stateNode.always ?? []) {
      for (const target of transition.target ?? []) add(current.id, target.id, labelOf(transition));
    }
    current.children.forEach(visit);
  };
  visit(node);
  return [...merged.values()];
}

/** One transition of `graph --format json`: xstate/graph's edge, plus the rule or policy it stands for. */
export interface JsonEdge {
  source: string;
  target: string;
  /** The event that takes it; `always` for an eventless transition. */
  label: { text: string };
  /** The rule, policy or outcome the transition stands for (`output.approved equals true`). */
  description?: string;
}

export interface JsonNode {
  id: string;
  /** What the stage this state runs is for, from its definition. */
  description?: string;
  /** A parallel group's state: the siblings it spawns (not states), its join and policy. */
  group?: {
    siblings: { stage: string; description?: string }[];
    join: string;
    policy: string;
    maxConcurrency: number;
    /** A map group's list: its one sibling runs once per item. */
    map?: { over: string; maxItems: number };
  };
  children: JsonNode[];
  edges: JsonEdge[];
}

/**
 * xstate/graph's directed graph as JSON, with the eventless transitions it leaves out (a parallel
 * group's edges to its join and to `failed`) among each node's edges; on each stage's node (a
 * top-level state) its description, and on each group's state what the definition says of it.
 */
export function graphJson(node: DirectedGraphNode, notes: GraphNotes = NO_NOTES): JsonNode {
  const evented = node.edges.map((edge) =>
    jsonEdge(edge.source.id, edge.target.id, edge.transition),
  );
  const eventless = (node.stateNode.always ?? []).flatMap((transition) =>
    (transition.target ?? []).map((target) => jsonEdge(node.id, target.id, transition)),
  );
  const { key } = node.stateNode;
  const description = isTopLevel(node) ? notes.descriptions.get(key) : undefined;
  const group = isTopLevel(node) ? notes.groups.get(key) : undefined;
  return {
    id: node.id,
    ...(description !== undefined && { description }),
    ...(group && {
      group: {
        siblings: group.siblings.map((stage) => {
          const about = notes.descriptions.get(stage);
          return { stage, ...(about !== undefined && { description: about }) };
        }),
        join: group.join,
        policy: group.policy,
        maxConcurrency: group.maxConcurrency,
        ...(group.map && { map: group.map }),
      },
    }),
    children: node.children.map((child) => graphJson(child, notes)),
    edges: [...evented, ...eventless],
  };
}

function jsonEdge(
  source: string,
  target: string,
  transition: DirectedGraphEdge["transition"],
): JsonEdge {
  return {
    source,
    target,
    label: { text: transition.eventType || "always" },
    ...(transition.description && { description: transition.description }),
  };
}

function labelOf(transition: DirectedGraphEdge["transition"]): string {
  if (transition.description) return transition.description;
  const done = /^xstate\.done\.actor\.(.+)$/.exec(transition.eventType);
  return done ? `${done[1]} done` : transition.eventType || "always";
}

const safeId = (id: string): string => `s_${id.replace(/[^A-Za-z0-9]/g, "_")}`;
const nameOf = (node: DirectedGraphNode): string => node.stateNode.key;
const initialOf = (node: DirectedGraphNode): string | undefined =>
  node.stateNode.initial?.target?.[0]?.id;
const isParallel = (node: DirectedGraphNode): boolean => node.stateNode.type === "parallel";
const isFinal = (node: DirectedGraphNode): boolean => node.stateNode.type === "final";

function mermaid(root: DirectedGraphNode, edges: Edge[], notes: GraphNotes): string {
  const lines = ["stateDiagram-v2", "  direction LR"];
  const initial = initialOf(root);
  if (initial) lines.push(`  [*] --> ${safeId(initial)}`);
  const write = (node: DirectedGraphNode, indent: string): void => {
    lines.push(`${indent}state "${labelOfState(node, notes)}" as ${safeId(node.id)}`);
    if (node.children.length === 0) {
      if (isFinal(node)) lines.push(`${indent}${safeId(node.id)} --> [*]`);
      return;
    }
    lines.push(`${indent}state ${safeId(node.id)} {`);
    node.children.forEach((child, index) => {
      if (isParallel(node) && index > 0) lines.push(`${indent}  --`);
      write(child, `${indent}  `);
    });
    const start = initialOf(node);
    if (start && !isParallel(node)) lines.push(`${indent}  [*] --> ${safeId(start)}`);
    lines.push(`${indent}}`);
  };
  for (const child of root.children) write(child, "  ");
  for (const edge of edges)
    lines.push(`  ${safeId(edge.source)} --> ${safeId(edge.target)} : ${edge.label}`);
  return `${lines.join("\n")}\n`;
}

function dot(root: DirectedGraphNode, edges: Edge[], notes: GraphNotes): string {
  const lines = [
    `digraph "${root.id}" {`,
    "  rankdir=LR;",
    "  compound=true;",
    "  node [shape=box, style=rounded];",
  ];
  const anchor = (id: string): string => `"${id}"`;
  const composite = new Set<string>();
  const write = (node: DirectedGraphNode, indent: string): void => {
    if (node.children.length === 0) {
      lines.push(
        `${indent}${anchor(node.id)} [label="${labelOfState(node, notes)}"${isFinal(node) ? ", peripheries=2" : ""}];`,
      );
      return;
    }
    composite.add(node.id);
    lines.push(`${indent}subgraph "cluster_${node.id}" {`);
    lines.push(`${indent}  label="${nameOf(node)}${isParallel(node) ? " (parallel)" : ""}";`);
    lines.push(`${indent}  ${anchor(node.id)} [shape=point, width=0.05];`);
    for (const child of node.children) write(child, `${indent}  `);
    lines.push(`${indent}}`);
  };
  for (const child of root.children) write(child, "  ");
  for (const edge of edges) {
    const heads = [
      composite.has(edge.source) ? `ltail="cluster_${edge.source}"` : "",
      composite.has(edge.target) ? `lhead="cluster_${edge.target}"` : "",
      `label="${edge.label.replace(/"/g, '\\"')}"`,
    ].filter(Boolean);
    lines.push(`  ${anchor(edge.source)} -> ${anchor(edge.target)} [${heads.join(", ")}];`);
  }
  lines.push("}");
  return `${lines.join("\n")}\n`;
}
