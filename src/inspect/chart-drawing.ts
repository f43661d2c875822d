import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import type { Chart, ChartEdge, ChartNode } from "./chart.js";
import {
  BADGE_HEIGHT,
  type Box,
  badgeOf,
  badgeWidth,
  COMPOUND_PADDING,
  chartExtent,
  type DrawnEdge,
  drawnEdges,
  initialId,
  PAD,
  SKEW,
  stateLabel,
} from "./chart-metrics.js";

/**
 * How a chart is drawn, the one drawing the page shows and `graph --format svg` prints: the
 * laid-out chart as a tree of SVG elements, which the page turns into DOM and the command into
 * text, its boxes as big as chart-metrics.ts says. Pure, with no DOM and no Node: the page
 * bundles it.
 */

/** One SVG element: its tag, its attributes and its children (elements or text). */
export interface SvgElement {
  tag: string;
  attrs: Record<string, string | number>;
  children: Array<SvgElement | string>;
}

/** The ends of a pipeline, each drawn in its own colour. */
const ENDS = new Set(["done", "failed", "cancelled"]);

const isCompound = (node: ChartNode): boolean => node.children.length > 0 || node.sub !== undefined;

/** The lifecycle states an LLM stage shows, in the order a stage goes through them. */
const LIFECYCLE: ReadonlyArray<readonly [string, string]> = [
  ["setup", "Setup"],
  ["init", "Init"],
  ["checkGate", "Gate"],
  ["act", "Act"],
  ["assert", "Assert"],
  ["exit", "Exit"],
];

/** Where the edges of `chart` and its sub-pipelines' end up: their full labels, by edge id. */
function edgeIndex(chart: Chart, into = new Map<string, DrawnEdge>()): Map<string, DrawnEdge> {
  for (const edge of drawnEdges(chart)) into.set(edge.id, edge);
  const visit = (node: ChartNode): void => {
    if (node.sub) edgeIndex(node.sub, into);
    node.children.forEach(visit);
  };
  visit(chart.root);
  return into;
}

/**
 * Every state of the chart and of its sub-pipelines, by id; the charts' initial-state markers,
 * by their id; and each stage's way into `failed`, by the stage's state id.
 */
function nodeIndex(chart: Chart) {
  const nodes = new Map<string, ChartNode>();
  const initials = new Map<string, string>();
  const failures = new Map<string, ChartEdge>();
  const visit = (current: Chart): void => {
    if (current.root.initial) initials.set(initialId(current), current.root.initial);
    for (const edge of current.edges) if (edge.role === "failure") failures.set(edge.source, edge);
    const walk = (node: ChartNode): void => {
      nodes.set(node.id, node);
      node.children.forEach(walk);
      if (node.sub) visit(node.sub);
      node.sub?.root.children.forEach(walk);
    };
    walk(current.root);
  };
  visit(chart);
  return { nodes, initials, failures };
}

const boxOf = (laid: ElkNode): Box => ({
  x: laid.x ?? 0,
  y: laid.y ?? 0,
  width: laid.width ?? 0,
  height: laid.height ?? 0,
});

const el = (
  tag: string,
  attrs: Record<string, string | number | undefined> = {},
  ...children: Array<SvgElement | string | undefined | false>
): SvgElement => ({
  tag,
  attrs: Object.fromEntries(
    Object.entries(attrs).filter(
      (entry): entry is [string, string | number] => entry[1] !== undefined,
    ),
  ),
  children: children.filter((child): child is SvgElement | string => !!child),
});

/**
 * The chart laid out as `laid` (one of its layouts), as the `<svg>` element the page shows:
 * every state's box (`data-state`, `data-kind`, `data-end`, `data-entry`), the entry's marker,
 * every edge with its guard short and whole in its tooltip, each stage's failure marker with
 * the route it stands for (shown on hover or selection).
 */
export function drawChart(chart: Chart, laid: ElkNode): SvgElement {
  const extent = chartExtent(laid);
  const { nodes, initials, failures } = nodeIndex(chart);
  const edges = edgeIndex(chart);
  const entries = new Set(initials.values());
  const boxes = new Map<string, Box>();
  const collect = (laidNode: ElkNode): void => {
    boxes.set(laidNode.id, boxOf(laidNode));
    laidNode.children?.forEach(collect);
  };
  laid.children?.forEach(collect);
  const drawn: SvgElement[] = [];
  const laidEdges: ElkExtendedEdge[] = [...((laid.edges ?? []) as ElkExtendedEdge[])];
  const drawNode = (laidNode: ElkNode): void => {
    laidEdges.push(...((laidNode.edges ?? []) as ElkExtendedEdge[]));
    const node = nodes.get(laidNode.id);
    const box = boxes.get(laidNode.id) as Box;
    const entry = initials.get(laidNode.id);
    const failure = failures.get(laidNode.id);
    if (node)
      drawn.push(
        stateBox(node, box, failure && failureRoute(failure, box, boxes), entries.has(node.id)),
      );
    else if (entry) drawn.push(initialMarker(entry, box));
    laidNode.children?.forEach(drawNode);
  };
  laid.children?.forEach(drawNode);
  return el(
    "svg",
    {
      viewBox: `${extent.x} ${extent.y} ${extent.width} ${extent.height}`,
      role: "img",
      class: "stagechart-chart",
    },
    el(
      "defs",
      {},
      arrowMarker("arrow", "arrowhead"),
      arrowMarker("arrow-fail", "arrowhead arrowhead-fail"),
    ),
    ...drawn,
    ...laidEdges.map((edge) => edgeLine(edge, edges.get(edge.id))),
  );
}

function arrowMarker(id: string, className: string): SvgElement {
  return el(
    "marker",
    {
      id,
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse",
    },
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: className }),
  );
}

/** A state's box: its frame (a shape per kind), its name, its badge or lifecycle, its failure marker. */
function stateBox(
  node: ChartNode,
  box: Box,
  failure: SvgElement | undefined,
  entry: boolean,
): SvgElement {
  const compound = isCompound(node);
  const end = node.type === "final" && ENDS.has(node.key) ? node.key : undefined;
  const classes = [
    "state",
    `state-${node.type}`,
    ...(node.stage ? ["stage"] : []),
    ...(node.kind ? [`kind-${node.kind}`] : []),
    ...(node.group ? ["group"] : []),
    ...(compound ? ["compound"] : []),
  ].join(" ");
  const tooltip = node.description ? `${node.key}: ${node.description}` : stateLabel(node);
  return el(
    "g",
    {
      class: classes,
      "data-state": node.stage ?? node.id,
      transform: `translate(${box.x} ${box.y})`,
      "data-node": node.id,
      "data-stage-node": node.stage,
      "data-kind": node.kind,
      "data-end": end,
      "data-entry": entry ? "true" : undefined,
    },
    el("title", {}, tooltip),
    ...frame(node, box, compound),
    label(node, box, compound),
    ...badge(node, box, compound),
    ...(node.kind === "llm" && !compound ? lifecycle(node, box) : []),
    ...(failure ? [failure] : []),
  );
}

function frame(node: ChartNode, box: Box, compound: boolean): SvgElement[] {
  const { width, height } = box;
  if (node.kind === "ask" && !compound) {
    const d = `M ${SKEW} 0 H ${width} L ${width - SKEW} ${height} H 0 Z`;
    return [el("path", { d, class: "frame" })];
  }
  const rx =
    node.type === "final"
      ? height / 2
      : node.kind === "code" || node.kind === "command"
        ? 3
        : node.kind === "llm"
          ? 12
          : 8;
  const outer = el("rect", { width, height, rx, class: "frame" });
  // A sub-pipeline is framed twice, as a flowchart's predefined process.
  if (node.kind !== "pipeline") return [outer];
  const inner = { x: 3, y: 3, width: width - 6, height: height - 6, rx: rx - 2 };
  return [outer, el("rect", { ...inner, class: "frame-inner" })];
}

function label(node: ChartNode, box: Box, compound: boolean): SvgElement {
  const text = stateLabel(node);
  if (node.type === "final")
    return el(
      "text",
      { x: box.width / 2, y: box.height / 2 + 5, "text-anchor": "middle", class: "label" },
      text,
    );
  const x = compound ? COMPOUND_PADDING.left : PAD + (node.kind === "ask" ? SKEW : 0);
  const y = compound ? 22 : node.kind === "llm" ? 19 : box.height / 2 + 5;
  return el("text", { x, y, class: "label" }, text);
}

function badge(node: ChartNode, box: Box, compound: boolean): SvgElement[] {
  const text = badgeOf(node);
  if (text === undefined) return [];
  const width = badgeWidth(text);
  const x = box.width - PAD - width - (node.kind === "ask" && !compound ? SKEW : 0);
  const y = compound ? 9 : (box.height - BADGE_HEIGHT) / 2;
  return [
    el(
      "g",
      { class: "badge", transform: `translate(${x} ${y})` },
      el("rect", { width, height: BADGE_HEIGHT, rx: 4 }),
      el("text", { x: width / 2, y: 12, "text-anchor": "middle" }, text),
    ),
  ];
}

/** An LLM stage's lifecycle, a segment per state, and room for the name of the one it is in. */
function lifecycle(node: ChartNode, box: Box): SvgElement[] {
  const gap = 3;
  const segment = (box.width - 2 * PAD - gap * (LIFECYCLE.length - 1)) / LIFECYCLE.length;
  return [
    el("text", {
      x: box.width - PAD,
      y: 19,
      "text-anchor": "end",
      class: "phase",
      "data-owner": node.id,
    }),
    ...LIFECYCLE.map(([step, name], i) =>
      el(
        "g",
        {
          class: "pill",
          "data-state": `${node.stage}.${step}`,
          "data-owner": node.id,
          "data-phase": name,
        },
        el("title", {}, name),
        el("rect", {
          x: PAD + i * (segment + gap),
          y: box.height - 14,
          width: segment,
          height: 6,
          rx: 3,
        }),
      ),
    ),
  ];
}

/**
 * A stage's way into `failed`, which is not laid out as an edge (every stage has one): a marker
 * on its box, and the route it stands for, straight to `failed`, shown while the stage is hovered,
 * picked, or failed.
 */
function failureRoute(
  failure: ChartEdge,
  box: Box,
  boxes: ReadonlyMap<string, Box>,
): SvgElement | undefined {
  const target = boxes.get(failure.target);
  if (!target) return undefined;
  const from = { x: box.width - 2, y: box.height - 2 };
  const centre = {
    x: target.x + target.width / 2 - box.x,
    y: target.y + target.height / 2 - box.y,
  };
  const to = borderPoint(from, centre, target.width / 2, target.height / 2);
  const cross = "M -2.5 -2.5 L 2.5 2.5 M 2.5 -2.5 L -2.5 2.5";
  return el(
    "g",
    { class: "fails", "data-fails": failure.target },
    el(
      "title",
      {},
      `${failure.label} → ${failure.target.slice(failure.target.lastIndexOf(".") + 1)}`,
    ),
    el("path", {
      class: "failure-edge",
      d: `M ${from.x} ${from.y} L ${round(to.x)} ${round(to.y)}`,
      "marker-end": "url(#arrow-fail)",
    }),
    el("circle", { cx: from.x, cy: from.y, r: 6, class: "fails-mark" }),
    el("path", { d: cross, transform: `translate(${from.x} ${from.y})`, class: "fails-cross" }),
  );
}

/** Where the line from `from` to a box's centre crosses the box's border. */
function borderPoint(
  from: { x: number; y: number },
  centre: { x: number; y: number },
  halfWidth: number,
  halfHeight: number,
): { x: number; y: number } {
  const dx = from.x - centre.x;
  const dy = from.y - centre.y;
  const t = Math.min(
    dx === 0 ? Number.POSITIVE_INFINITY : halfWidth / Math.abs(dx),
    dy === 0 ? Number.POSITIVE_INFINITY : halfHeight / Math.abs(dy),
  );
  return { x: centre.x + dx * t, y: centre.y + dy * t };
}

const round = (n: number): number => Math.round(n * 10) / 10;

/** The entry's marker: a dot, whose arrow (laid out as an edge) points at the entry. */
function initialMarker(entry: string, box: Box): SvgElement {
  const r = box.width / 2;
  return el(
    "g",
    { class: "initial", "data-initial-of": entry, transform: `translate(${box.x} ${box.y})` },
    el("title", {}, `starts at ${entry.slice(entry.lastIndexOf(".") + 1)}`),
    el("circle", { cx: r, cy: r, r }),
  );
}

/** An edge: its route, its guard short on it and whole in its tooltip. */
function edgeLine(laid: ElkExtendedEdge, edge: DrawnEdge | undefined): SvgElement {
  const paths = (laid.sections ?? []).map((section) => {
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
    const d = points.map((p, i) => `${i ? "L" : "M"} ${p.x} ${p.y}`).join(" ");
    return el("path", { d, "marker-end": "url(#arrow)" });
  });
  const labels = (laid.labels ?? []).map((label) => {
    const at = label.x === undefined ? middleOf(laid) : { x: label.x, y: label.y ?? 0 };
    return el("text", { x: at.x, y: at.y + 12, class: "edge-label" }, label.text ?? "");
  });
  return el(
    "g",
    { class: edge ? "edge" : "edge initial-edge" },
    ...(edge ? [el("title", {}, edge.label)] : []),
    ...paths,
    ...labels,
  );
}

/** Where a label ELK did not place goes: beside the middle of its route's longest stretch. */
function middleOf(laid: ElkExtendedEdge): { x: number; y: number } {
  let best = { x: 0, y: 0, length: -1 };
  for (const section of laid.sections ?? []) {
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
    for (let i = 1; i < points.length; i++) {
      const [a, b] = [points[i - 1], points[i]] as [
        { x: number; y: number },
        { x: number; y: number },
      ];
      const length = Math.abs(b.x - a.x) + Math.abs(b.y - a.y);
      if (length > best.length) best = { x: (a.x + b.x) / 2 + 4, y: (a.y + b.y) / 2 + 2, length };
    }
  }
  return best;
}
