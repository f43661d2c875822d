import elkBundled, { type ElkNode } from "elkjs/lib/elk.bundled.js";
import type { ElkExtendedEdge } from "elkjs/lib/elk-api.js";
import type { Chart, ChartLayouts, ChartNode } from "./chart.js";
import {
  boxSize,
  COMPOUND_PADDING,
  compoundMinWidth,
  type DrawnEdge,
  drawnEdges,
  FONT,
  INITIAL_SIZE,
  initialId,
  LEGIBLE_SCALE,
  PAGE_ROOM,
  scaleToFit,
  shortLabel,
  textWidth,
} from "./chart-metrics.js";

/**
 * ELK runs here, in the server, once per chart: the page draws the positions it is sent and
 * loads no layout engine (1.6 MB of GWT-compiled code that took ~0.4 s to start in a worker).
 */
// A CommonJS module: the constructor is its exports' own `default`.
const elk = new elkBundled.default();

type Direction = "RIGHT" | "DOWN";

/**
 * A chain too long for the page wrapped into rows (left to right) or columns (top to bottom),
 * the layering cut where ELK finds best for each of these aspect ratios; the layout kept is the
 * one that shows the chart largest on the page.
 */
const WRAPS: readonly Wrap[] = [1.2, 2.2].flatMap((aspect) => [
  { aspect, compact: true },
  { aspect, compact: false },
]);

/** A wrapped layout's aspect ratio, and whether its rows are compacted (which ELK may botch). */
interface Wrap {
  aspect: number;
  compact: boolean;
}

/**
 * Lays a statechart out both ways, left to right and top to bottom, in reading order from its
 * entry: nested states inside their parents (each laid out on its own: no edge crosses a
 * state's border), the ends last. A chart that neither way shows legibly on the page (a long
 * chain) is also wrapped, each way, and laid out as it shows largest.
 */
export async function layoutChart(chart: Chart): Promise<ChartLayouts> {
  const [right, down] = await Promise.all([
    elk.layout(elkGraph(chart, "RIGHT", undefined)),
    elk.layout(elkGraph(chart, "DOWN", undefined)),
  ]);
  // A machine whose transitions cross its states' borders is laid out as one: it is not wrapped.
  if (Math.max(scale(right), scale(down)) >= LEGIBLE_SCALE || crossesBorders(chart))
    return { right, down };
  const [wrappedRight, wrappedDown] = await Promise.all([
    wrapped(chart, "RIGHT", right),
    wrapped(chart, "DOWN", down),
  ]);
  return { right: wrappedRight, down: wrappedDown };
}

const scale = (laid: ElkNode): number => scaleToFit(laid, PAGE_ROOM);

/** The wrapped layout that shows the chart largest, if it shows it clearly larger than `plain`. */
async function wrapped(chart: Chart, direction: Direction, plain: ElkNode): Promise<ElkNode> {
  let best = plain;
  for (const wrap of WRAPS) {
    // ELK's wrapping is less sure-footed than its plain layering: a wrapped layout it cannot
    // make, or makes with a route or a label astray, is not kept.
    const laid = await elk.layout(elkGraph(chart, direction, wrap)).catch(() => undefined);
    if (laid && whole(laid) && scale(laid) > scale(best) * 1.02) best = laid;
    if (scale(best) === 1) break;
  }
  return best;
}

/** Whether every edge of a layout has its route, from its source to its target, and every label its place. */
function whole(laid: ElkNode): boolean {
  const boxes = new Map<string, ElkNode>();
  const edges: ElkExtendedEdge[] = [];
  const visit = (node: ElkNode): void => {
    boxes.set(node.id, node);
    edges.push(...((node.edges ?? []) as ElkExtendedEdge[]));
    node.children?.forEach(visit);
  };
  visit(laid);
  const touches = (point: { x: number; y: number } | undefined, id: string | undefined) => {
    const box = id === undefined ? undefined : boxes.get(id);
    if (!point || !box) return false;
    const [x, y] = [box.x ?? 0, box.y ?? 0];
    return (
      point.x >= x - 2 &&
      point.x <= x + (box.width ?? 0) + 2 &&
      point.y >= y - 2 &&
      point.y <= y + (box.height ?? 0) + 2
    );
  };
  return (
    (laid.width ?? 0) > 0 &&
    edges.every(
      (edge) =>
        touches(edge.sections?.[0]?.startPoint, edge.sources[0]) &&
        touches(edge.sections?.at(-1)?.endPoint, edge.targets[0]) &&
        (edge.labels ?? []).every((label) => label.x !== undefined && label.y !== undefined),
    )
  );
}

function layoutOptions(direction: Direction): Record<string, string> {
  return {
    "elk.algorithm": "layered",
    "elk.direction": direction,
    "elk.edgeRouting": "ORTHOGONAL",
    ...readingOrderOptions,
    // The ends, which only a stage's failure (not drawn as an edge) may reach, stay in the chart.
    "elk.separateConnectedComponents": "false",
    "elk.spacing.nodeNode": "24",
    "elk.layered.spacing.nodeNodeBetweenLayers": "20",
    "elk.layered.spacing.edgeNodeBetweenLayers": "6",
    "elk.layered.spacing.edgeEdgeBetweenLayers": "6",
    "elk.spacing.edgeNode": "12",
    "elk.spacing.edgeEdge": "8",
    "elk.spacing.edgeLabel": "2",
  };
}

/**
 * Whether an edge of the chart leaves the state it starts in: another XState app's nested
 * states may (a pipeline's never do: a sub-pipeline's edges stay inside it, a group's siblings
 * have none).
 */
function crossesBorders(chart: Chart): boolean {
  const top = new Set(chart.root.children.map((child) => child.id));
  return drawnEdges(chart).some((e) => !top.has(e.source) || !top.has(e.target));
}

/**
 * The states are given in reading order from the entry: an edge back to an earlier one is the
 * one reversed, so the entry comes first and the pipeline reads forwards. (ELK cannot do this
 * across nested states' borders: a machine laid out as one keeps its default.)
 */
const readingOrderOptions = {
  "elk.layered.cycleBreaking.strategy": "MODEL_ORDER",
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
};

function elkGraph(chart: Chart, direction: Direction, wrap: Wrap | undefined): ElkNode {
  if (crossesBorders(chart)) {
    const graph = elkGraph({ ...chart, edges: [] }, direction, undefined);
    return asOne({
      ...graph,
      layoutOptions: { ...graph.layoutOptions, "elk.hierarchyHandling": "INCLUDE_CHILDREN" },
      edges: contents(chart, direction).edges ?? [],
    });
  }
  return {
    id: "__root",
    layoutOptions: {
      ...layoutOptions(direction),
      "elk.json.shapeCoords": "ROOT",
      "elk.json.edgeCoords": "ROOT",
      ...(wrap !== undefined && {
        "elk.layered.wrapping.strategy": "MULTI_EDGE",
        "elk.aspectRatio": String(wrap.aspect),
        // Each row (or column) as long as its own states: not all as long as the longest.
        ...(wrap.compact && { "elk.layered.compaction.postCompaction.strategy": "LEFT" }),
      }),
    },
    ...contents(chart, direction),
  };
}

/** A graph laid out as one across nested states' borders: without the reading-order options. */
function asOne(node: ElkNode): ElkNode {
  const options = { ...node.layoutOptions };
  for (const key of Object.keys(readingOrderOptions)) delete options[key];
  return { ...node, layoutOptions: options, children: node.children?.map(asOne) };
}

/** A chart's states, its entry's marker first and the rest in reading order, and its edges. */
function contents(chart: Chart, direction: Direction): Pick<ElkNode, "children" | "edges"> {
  const edges = drawnEdges(chart);
  const nodes = readingOrder(chart.root.children, chart.root.initial, edges);
  const entry = chart.root.initial;
  const marker: ElkNode = {
    id: initialId(chart),
    width: INITIAL_SIZE,
    height: INITIAL_SIZE,
    layoutOptions: { "elk.layered.layering.layerConstraint": "FIRST" },
  };
  return {
    children: [...(entry ? [marker] : []), ...nodes.map((node) => toElk(node, direction))],
    edges: [
      ...(entry ? [{ id: initialId(chart), sources: [marker.id], targets: [entry] }] : []),
      ...edges.map((e) => {
        const text = shortLabel(e.label);
        return {
          id: e.id,
          sources: [e.source],
          targets: [e.target],
          labels: text ? [{ text, width: textWidth(text, FONT.edge), height: FONT.edge + 4 }] : [],
        };
      }),
    ],
  };
}

/** The states from the entry on, breadth first along their edges in rule order, then the rest. */
function readingOrder(
  states: readonly ChartNode[],
  entry: string | undefined,
  edges: readonly DrawnEdge[],
): ChartNode[] {
  const byId = new Map(states.map((s) => [s.id, s]));
  const seen = new Set<string>();
  const queue = entry ? [entry] : [];
  while (queue.length) {
    const id = queue.shift() as string;
    if (seen.has(id) || !byId.has(id)) continue;
    seen.add(id);
    queue.push(...edges.filter((e) => e.source === id).map((e) => e.target));
  }
  return [
    ...[...seen].map((id) => byId.get(id) as ChartNode),
    ...states.filter((s) => !seen.has(s.id)),
  ];
}

function toElk(node: ChartNode, direction: Direction): ElkNode {
  const last =
    node.type === "final" ? { "elk.layered.layering.layerConstraint": "LAST" } : undefined;
  if (!node.sub && node.children.length === 0)
    return { id: node.id, ...boxSize(node), ...(last && { layoutOptions: last }) };
  const { top, left, bottom, right } = COMPOUND_PADDING;
  const inside = node.sub
    ? contents(node.sub, direction)
    : { children: node.children.map((child) => toElk(child, direction)) };
  return {
    id: node.id,
    layoutOptions: {
      ...layoutOptions(direction),
      "elk.padding": `[top=${top},left=${left},bottom=${bottom},right=${right}]`,
      "elk.nodeSize.constraints": "MINIMUM_SIZE",
      "elk.nodeSize.minimum": `(${compoundMinWidth(node)}, ${top + bottom})`,
    },
    ...inside,
  };
}
