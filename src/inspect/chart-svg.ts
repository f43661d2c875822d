import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import type { Chart, ChartLayouts, ChartNode } from "./chart.js";

/**
 * A laid-out chart as one standalone SVG document: what `stagechart graph --format svg` prints
 * and the page's "Export SVG" downloads, from the layout the page draws (chart-layout.ts). Its
 * styles are inside it, so it shows the same anywhere (a browser, an editor, a docs page); it
 * holds the chart only, not a run's highlights. Pure string building: the page bundles it too.
 */

export type ChartDirection = keyof ChartLayouts;

/** The room a chart has on the page at 1440×900: the default when there is no page to fit. */
export const PAGE_ROOM = { width: 1360, height: 648 };

/** The lifecycle states a stage box shows, in the order a stage goes through them. */
const LIFECYCLE: ReadonlyArray<readonly [string, string]> = [
  ["setup", "Setup"],
  ["init", "Init"],
  ["checkGate", "Gate"],
  ["act", "Act"],
  ["assert", "Assert"],
  ["exit", "Exit"],
];

/**
 * The layout that shows the chart larger in `room` (never above its natural size): left to
 * right, unless that must shrink and top to bottom shrinks it less (a long chain).
 */
export function fittedDirection(
  layouts: ChartLayouts,
  room: { width: number; height: number },
): ChartDirection {
  const scale = (laid: ElkNode) =>
    Math.min(
      1,
      room.width / Math.max(laid.width ?? 0, 1),
      room.height / Math.max(laid.height ?? 0, 1),
    );
  const across = scale(layouts.right);
  return across < 1 && scale(layouts.down) > across ? "down" : "right";
}

/** The chart laid out as `laid` (one of its layouts), as an SVG document. */
export function chartSvg(chart: Chart, laid: ElkNode): string {
  const width = (laid.width ?? 0) + 8;
  const height = (laid.height ?? 0) + 8;
  const nodes = new Map<string, ChartNode>();
  const index = (node: ChartNode): void => {
    nodes.set(node.id, node);
    node.children.forEach(index);
    node.sub?.root.children.forEach(index);
  };
  index(chart.root);
  const boxes: string[] = [];
  const drawNode = (laidNode: ElkNode): void => {
    const node = nodes.get(laidNode.id);
    if (node) boxes.push(box(node, laidNode));
    laidNode.children?.forEach(drawNode);
  };
  laid.children?.forEach(drawNode);
  const edges = ((laid.edges ?? []) as ElkExtendedEdge[]).map(edge);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="-4 -4 ${width} ${height}" width="${width}" height="${height}" role="img" class="stagechart-chart">`,
    `<title>${text(chart.root.id)}</title>`,
    `<style>${STYLE}</style>`,
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead"/></marker></defs>`,
    `<rect x="-4" y="-4" width="${width}" height="${height}" class="background"/>`,
    ...boxes,
    ...edges,
    "</svg>",
    "",
  ].join("\n");
}

/** A state's box: its frame, its label and, for a stage that runs alone, its lifecycle pills. */
function box(node: ChartNode, laid: ElkNode): string {
  const compound = node.children.length > 0 || node.sub !== undefined;
  const classes = [
    "state",
    `state-${node.type}`,
    ...(node.stage ? ["stage"] : []),
    ...(node.group ? ["group"] : []),
    ...(compound ? ["compound"] : []),
  ].join(" ");
  const width = laid.width ?? 0;
  const height = laid.height ?? 0;
  const labelY = compound ? 19 : height / 2 + (node.stage ? -8 : 4);
  const parts = [
    `<g class="${classes}" data-state="${attr(node.stage ?? node.id)}" transform="translate(${laid.x ?? 0} ${laid.y ?? 0})">`,
    ...(node.description ? [`<title>${text(`${node.key}: ${node.description}`)}</title>`] : []),
    `<rect width="${width}" height="${height}" rx="10" class="frame"/>`,
    `<text x="12" y="${labelY}" class="label">${text(stateLabel(node))}</text>`,
    ...(node.stage && !compound ? LIFECYCLE.map(([, label], i) => pill(label, i, height)) : []),
    "</g>",
  ];
  return parts.join("");
}

function pill(label: string, i: number, height: number): string {
  return `<g class="pill" transform="translate(${10 + i * 41} ${height - 28})"><rect width="38" height="18" rx="9"/><text x="19" y="13" text-anchor="middle">${label}</text></g>`;
}

/** A state's name as drawn: a group's with its policy (and its cap), a parallel state's marked. */
function stateLabel(node: ChartNode): string {
  if (node.type === "parallel") return `${node.key} ∥`;
  if (!node.group) return node.key;
  const capped = node.group.maxConcurrency < node.children.length;
  return `${node.key} ∥ ${node.group.policy}${capped ? `, ${node.group.maxConcurrency} at once` : ""}`;
}

function edge(laid: ElkExtendedEdge): string {
  const paths = (laid.sections ?? []).map((section) => {
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
    const d = points.map((p, i) => `${i ? "L" : "M"} ${p.x} ${p.y}`).join(" ");
    return `<path d="${d}" marker-end="url(#arrow)"/>`;
  });
  const labels = (laid.labels ?? []).map(
    (label) =>
      `<text x="${label.x ?? 0}" y="${(label.y ?? 0) + 11}" class="edge-label">${text(label.text ?? "")}</text>`,
  );
  return `<g class="edge">${[...paths, ...labels].join("")}</g>`;
}

const text = (value: string): string =>
  value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

const attr = (value: string): string => text(value).replaceAll('"', "&quot;");

/** The page's chart styles (visualizer/app.css), those a chart without a run's highlights uses. */
const STYLE = [
  ".stagechart-chart{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px}",
  ".background{fill:#fff}",
  ".frame{fill:#fff;stroke:#aab2c5;stroke-width:1.2}",
  ".state.compound>.frame{fill:#f8f9fc}",
  ".state.state-parallel>.frame,.state.group>.frame{fill:#f3f5ff;stroke:#9fb0ef;stroke-dasharray:5 3}",
  ".state.state-final .frame{stroke-width:2.5}",
  ".label{font-weight:600;fill:#344054}",
  ".pill rect{fill:#f2f4f7;stroke:#d0d5dd}",
  ".pill text{font-size:10px;fill:#667085}",
  ".edge path{fill:none;stroke:#98a2b3;stroke-width:1.3}",
  ".arrowhead{fill:#98a2b3}",
  ".edge-label{font-size:10px;fill:#667085;paint-order:stroke;stroke:#fff;stroke-width:3px}",
].join("");
