import elkBundled, { type ElkNode } from "elkjs/lib/elk.bundled.js";
import type { Chart, ChartLayouts, ChartNode } from "./chart.js";

/** Sizes of a stage box (with its lifecycle pills) and of a plain state's box. */
const STAGE = { width: 264, height: 66 };
const STATE = { width: 96, height: 30 };

/**
 * ELK runs here, in the server, once per chart: the page draws the positions it is sent and
 * loads no layout engine (1.6 MB of GWT-compiled code that took ~0.4 s to start in a worker).
 */
// A CommonJS module: the constructor is its exports' own `default`.
const elk = new elkBundled.default();

/** Lays a statechart out: nested states inside their parents, a group's siblings side by side. */
export async function layoutChart(chart: Chart): Promise<ChartLayouts> {
  const [right, down] = await Promise.all([
    elk.layout(elkGraph(chart, "RIGHT")),
    elk.layout(elkGraph(chart, "DOWN")),
  ]);
  return { right, down };
}

function elkGraph(chart: Chart, direction: "RIGHT" | "DOWN"): ElkNode {
  return {
    id: "__root",
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": direction,
      "elk.hierarchyHandling": "INCLUDE_CHILDREN",
      "elk.json.shapeCoords": "ROOT",
      "elk.json.edgeCoords": "ROOT",
      "elk.spacing.nodeNode": "28",
      "elk.layered.spacing.nodeNodeBetweenLayers": "56",
      "elk.edgeRouting": "ORTHOGONAL",
    },
    children: chart.root.children.map(toElk),
    edges: allEdges(chart).map((e, i) => ({
      id: `e${i}`,
      sources: [e.source],
      targets: [e.target],
      labels: e.label ? [{ text: e.label, width: e.label.length * 6.4, height: 14 }] : [],
    })),
  };
}

function toElk(node: ChartNode): ElkNode {
  const inner = [...node.children, ...(node.sub?.root.children ?? [])];
  if (inner.length === 0) {
    const size = node.stage
      ? STAGE
      : { ...STATE, width: Math.max(STATE.width, node.key.length * 8 + 24) };
    return { id: node.id, ...size };
  }
  return {
    id: node.id,
    layoutOptions: {
      "elk.padding": "[top=32,left=14,bottom=14,right=14]",
      ...((node.type === "parallel" || node.group) && { "elk.direction": "DOWN" }),
    },
    children: inner.map(toElk),
  };
}

function allEdges(chart: Chart): Chart["edges"] {
  const nested: Chart["edges"] = [];
  const visit = (node: ChartNode): void => {
    if (node.sub) nested.push(...allEdges(node.sub));
    node.children.forEach(visit);
  };
  visit(chart.root);
  const inChart = (id: string) => id !== chart.root.id;
  return [...chart.edges.filter((e) => inChart(e.source) && inChart(e.target)), ...nested];
}
