import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import type { Chart, ChartEdge, ChartNode } from "./chart.js";

/**
 * What the chart's layout (chart-layout.ts) and its drawing (chart-drawing.ts) agree on: the
 * sizes of its text and boxes, the names and guards as drawn, the edges drawn as lines, and how
 * much room a laid-out chart takes. Pure: the page bundles it.
 */

/** Font sizes, in the chart's own units (CSS px at its natural size). */
export const FONT = { label: 14, small: 11, edge: 12 } as const;

/** The smallest scale at which a state's name is still drawn at 11 px: Fit shrinks no further. */
export const LEGIBLE_SCALE = 11 / FONT.label;

/** The room a chart has on the page at 1440×900: the default when there is no page to fit. */
export const PAGE_ROOM = { width: 1360, height: 648 };

/** Room for the initial-state marker, the dot whose arrow points at the entry. */
export const INITIAL_SIZE = 14;

/** Inside a compound state: room for its name above its children. */
export const COMPOUND_PADDING = { top: 34, left: 14, bottom: 14, right: 14 };

/** The room between a box's border and what is drawn inside it. */
export const PAD = 10;
/** How far an ask stage's parallelogram leans. */
export const SKEW = 8;
/** The height of the badge naming a stage's kind. */
export const BADGE_HEIGHT = 16;
/** Room beside an LLM stage's name for the lifecycle phase it is in. */
const PHASE_ROOM = 40;

/** What each kind of stage that is not a model's says it is, on its badge. */
const BADGE: Record<string, string> = {
  code: "code",
  command: "command",
  ask: "ask",
  pipeline: "pipeline",
};

/**
 * About how wide `text` is drawn, a little over the widest common sans-serif (DejaVu Sans), so
 * that a name never runs out of its box. Character classes, in ems.
 */
export function textWidth(text: string, size: number, bold = false): number {
  let ems = 0;
  for (const char of text) {
    if ("ijl.,:;!'|".includes(char)) ems += 0.3;
    else if ("ftr()[] -/".includes(char)) ems += 0.42;
    else if ("mwMW".includes(char)) ems += 1;
    else if (char >= "A" && char <= "Z") ems += 0.74;
    else if (char.charCodeAt(0) > 127) ems += 0.85;
    else ems += 0.62;
  }
  return Math.ceil(ems * size * (bold ? 1.12 : 1));
}

/** A guard as its edge shows it: `next = "codegen" and…`; the whole of it is the edge's tooltip. */
export function shortLabel(label: string): string {
  if (label === "ok") return "";
  const terse = label
    .replaceAll("output.", "")
    .replaceAll(" notEquals ", " ≠ ")
    .replaceAll(" equals ", " = ");
  return terse.length <= 22 ? terse : `${terse.slice(0, 21).trimEnd()}…`;
}

/** A map group's lane as drawn: its stage, and how many items run in it once a run knows. */
export const laneLabel = (stage: string, items?: number): string =>
  `${stage} ×${items === undefined ? " each" : items}`;

/** A state's name as drawn: a group's own name with its policy, a parallel state's marked. */
export function stateLabel(node: ChartNode): string {
  if (node.type === "parallel") return `${node.key} ∥`;
  if (node.lane) return laneLabel(node.key);
  if (!node.group) return node.key;
  const capped = node.group.maxConcurrency < (node.group.map?.maxItems ?? node.children.length);
  return `${node.group.name} · ${node.group.policy}${capped ? `, ${node.group.maxConcurrency} at once` : ""}`;
}

export const badgeOf = (node: ChartNode): string | undefined =>
  node.kind === undefined ? undefined : BADGE[node.kind];
export const badgeWidth = (text: string): number => textWidth(text, FONT.small) + 10;

/** The size of a state's box with nothing inside it. */
export function boxSize(node: ChartNode): { width: number; height: number } {
  const label = textWidth(stateLabel(node), FONT.label, true);
  if (node.type === "final") return { width: Math.max(72, label + 32), height: 32 };
  if (!node.stage) return { width: Math.max(72, label + 2 * PAD), height: 32 };
  const badge = badgeOf(node);
  if (badge === undefined)
    return { width: Math.max(128, PAD + label + 8 + PHASE_ROOM + PAD), height: 44 };
  const lean = node.kind === "ask" ? 2 * SKEW : 0;
  return { width: Math.max(96, lean + PAD + label + 8 + badgeWidth(badge) + PAD), height: 38 };
}

/** The least width of a compound state's box: its name and its badge. */
export function compoundMinWidth(node: ChartNode): number {
  const badge = badgeOf(node);
  const label = textWidth(stateLabel(node), FONT.label, true);
  return COMPOUND_PADDING.left + label + (badge ? 12 + badgeWidth(badge) : 0) + PAD;
}

/** An edge the chart draws as a line, with the id its laid-out route carries. */
export interface DrawnEdge extends ChartEdge {
  id: string;
}

/** The edges of a chart (not a sub-pipeline's) drawn as lines: none of its failures, nothing internal, none from its root. */
export function drawnEdges(chart: Chart): DrawnEdge[] {
  return chart.edges.flatMap((edge, i) =>
    edge.role === undefined && edge.source !== chart.root.id && edge.target !== chart.root.id
      ? [{ ...edge, id: `${chart.root.id}#${i}` }]
      : [],
  );
}

/** The id of the initial-state marker of a chart, and of its arrow. */
export const initialId = (chart: Chart): string => `${chart.root.id}#initial`;

/** Where a laid-out box is: its corner and size, in the drawing's coordinates. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * What a laid-out chart covers, its boxes, routes and labels, with a margin of 4: a wrapped
 * layout's routes may run past the size ELK gives it.
 */
export function chartExtent(laid: ElkNode): Box {
  let [left, top, right, bottom] = [0, 0, laid.width ?? 0, laid.height ?? 0];
  const cover = (x: number, y: number, width = 0, height = 0): void => {
    left = Math.min(left, x);
    top = Math.min(top, y);
    right = Math.max(right, x + width);
    bottom = Math.max(bottom, y + height);
  };
  const visit = (node: ElkNode): void => {
    for (const edge of (node.edges ?? []) as ElkExtendedEdge[]) {
      for (const section of edge.sections ?? [])
        for (const p of [section.startPoint, ...(section.bendPoints ?? []), section.endPoint])
          cover(p.x, p.y);
      for (const label of edge.labels ?? [])
        if (label.x !== undefined) cover(label.x, label.y ?? 0, label.width, label.height);
    }
    for (const child of node.children ?? []) {
      cover(child.x ?? 0, child.y ?? 0, child.width, child.height);
      visit(child);
    }
  };
  visit(laid);
  return { x: left - 4, y: top - 4, width: right - left + 8, height: bottom - top + 8 };
}

/** The scale that shows a laid-out chart whole in `room`, never above its natural size. */
export function scaleToFit(laid: ElkNode, room: { width: number; height: number }): number {
  const { width, height } = chartExtent(laid);
  return Math.min(1, room.width / Math.max(width, 1), room.height / Math.max(height, 1));
}
