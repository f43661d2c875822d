import type { ElkNode } from "elkjs/lib/elk-api.js";
import type { Chart, ChartLayouts } from "./chart.js";
import { drawChart, type SvgElement } from "./chart-drawing.js";
import { chartExtent, scaleToFit } from "./chart-metrics.js";
import { CHART_STYLE } from "./chart-style.js";

/**
 * A laid-out chart as one standalone SVG document: what `stagechart graph --format svg` prints
 * and the page's "Export SVG" downloads, the very drawing the page shows (chart-drawing.ts). Its
 * styles are inside it, so it shows the same anywhere (a browser, an editor, a docs page); it
 * holds the chart only, not a run's highlights. Pure string building: the page bundles it too.
 */

export type ChartDirection = keyof ChartLayouts;

export { PAGE_ROOM } from "./chart-metrics.js";

/**
 * The layout that shows the chart larger in `room` (never above its natural size): left to
 * right, unless that must shrink and top to bottom shrinks it less (a long chain).
 */
export function fittedDirection(
  layouts: ChartLayouts,
  room: { width: number; height: number },
): ChartDirection {
  const across = scaleToFit(layouts.right, room);
  return across < 1 && scaleToFit(layouts.down, room) > across ? "down" : "right";
}

/** The chart laid out as `laid` (one of its layouts), as an SVG document. */
export function chartSvg(chart: Chart, laid: ElkNode): string {
  const drawing = drawChart(chart, laid);
  const { x, y, width, height } = chartExtent(laid);
  const [defs, ...rest] = drawing.children;
  const standalone: SvgElement = {
    tag: "svg",
    attrs: { xmlns: "http://www.w3.org/2000/svg", ...drawing.attrs, width, height },
    children: [
      { tag: "title", attrs: {}, children: [chart.root.id] },
      { tag: "style", attrs: {}, children: [CHART_STYLE] },
      ...(defs ? [defs] : []),
      { tag: "rect", attrs: { x, y, width, height, class: "background" }, children: [] },
      ...rest,
    ],
  };
  return `${serialise(standalone)}\n`;
}

function serialise(element: SvgElement | string): string {
  if (typeof element === "string") return text(element);
  const attrs = Object.entries(element.attrs)
    .map(([name, value]) => ` ${name}="${attr(String(value))}"`)
    .join("");
  if (element.tag === "style") return `<style>${element.children.join("")}</style>`;
  const inner = element.children.map(serialise).join("");
  return `<${element.tag}${attrs}${inner ? `>${inner}</${element.tag}>` : "/>"}`;
}

const text = (value: string): string =>
  value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

const attr = (value: string): string => text(value).replaceAll('"', "&quot;");
