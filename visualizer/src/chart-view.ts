import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import type { Chart, ChartLayouts, ChartNode } from "../../src/inspect/chart.js";
import { type ChartState, lifecyclePhases } from "../../src/inspect/chart-state.js";
import { type ChartDirection, chartSvg, fittedDirection } from "../../src/inspect/chart-svg.js";
import { svg } from "./dom.js";

/** The lifecycle states a stage box shows, in the order a stage goes through them. */
const LIFECYCLE = ["setup", "init", "checkGate", "act", "assert", "exit"];
const LIFECYCLE_LABEL: Record<string, string> = {
  setup: "Setup",
  init: "Init",
  checkGate: "Gate",
  act: "Act",
  assert: "Assert",
  exit: "Exit",
};

/** Zoom steps of the chart, relative to its natural size; "fit" shows all of it. */
const ZOOM_STEP = 1.25;
const ZOOM_MAX = 3;

/**
 * The statechart, as the server laid it out (src/inspect/chart-layout.ts), drawn as SVG. Each
 * state carries `data-state` (its stage id, or its full id) and, while active,
 * `data-active="true"`.
 */
export class ChartView {
  readonly element: HTMLElement;
  private readonly states = new Map<string, SVGElement>();
  private readonly pills = new Map<string, SVGElement>();
  private onPick: (stageId: string) => void = () => {};
  private readonly viewport: HTMLElement;
  private drawing: SVGElement | undefined;
  private natural = { width: 0, height: 0 };
  /** The layout drawn: left to right, or top to bottom. */
  private direction: ChartDirection = "right";
  /** The zoom factor, or "fit" (the whole chart in the viewport's width). */
  private zoom: number | "fit" = "fit";

  constructor(
    private readonly chart: Chart,
    private readonly layouts: ChartLayouts,
  ) {
    this.element = document.createElement("div");
    this.element.className = "chart";
    this.viewport = document.createElement("div");
    this.viewport.className = "chart-viewport";
    const tools = zoomControls((to) => this.zoomTo(to));
    tools.append(exportButton(() => this.download()));
    this.element.append(tools, this.viewport);
    pannable(this.viewport);
  }

  pickStage(listener: (stageId: string) => void): void {
    this.onPick = listener;
  }

  draw(): void {
    // A long chain laid left to right may fit better top to bottom: the larger fitted scale wins.
    this.direction = fittedDirection(this.layouts, this.room());
    const laid = this.layouts[this.direction];
    this.element.setAttribute("data-direction", this.direction);
    const width = (laid.width ?? 0) + 8;
    const height = (laid.height ?? 0) + 8;
    const root = svg("svg", { viewBox: `-4 -4 ${width} ${height}`, role: "img" });
    const defs = svg("defs");
    const marker = svg("marker", {
      id: "arrow",
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse",
    });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
    defs.append(marker);
    root.append(defs);
    const nodes = new Map<string, ChartNode>();
    const index = (node: ChartNode): void => {
      nodes.set(node.id, node);
      node.children.forEach(index);
      node.sub?.root.children.forEach(index);
    };
    index(this.chart.root);
    const drawNode = (laidNode: ElkNode): void => {
      const node = nodes.get(laidNode.id);
      if (node) root.append(this.box(node, laidNode));
      laidNode.children?.forEach(drawNode);
    };
    laid.children?.forEach(drawNode);
    for (const edge of (laid.edges ?? []) as ElkExtendedEdge[]) root.append(drawEdge(edge));
    this.viewport.replaceChildren(root);
    this.drawing = root;
    this.natural = { width, height };
    this.zoomTo(this.zoom);
  }

  /** The scale that shows a chart of this size whole in the viewport, never above 1. */
  private fitScale(width: number, height: number): number {
    const room = this.room();
    return Math.min(
      1,
      (room.width || width) / Math.max(width, 1),
      room.height / Math.max(height, 1),
    );
  }

  /** The viewport's width (0 before it is laid out) and its greatest height (unbounded: none). */
  private room(): { width: number; height: number } {
    return {
      width: this.viewport.clientWidth,
      height:
        Number.parseFloat(getComputedStyle(this.viewport).maxHeight) || Number.POSITIVE_INFINITY,
    };
  }

  /** The chart as drawn (the same layout), as a standalone SVG file: what `graph --format svg` prints. */
  exportSvg(): string {
    return chartSvg(this.chart, this.layouts[this.direction]);
  }

  private download(): void {
    const file = new Blob([this.exportSvg()], { type: "image/svg+xml" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(file);
    link.download = `${this.chart.root.id}.svg`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  /** Fits the whole chart into the viewport (never above its natural size), or zooms it. */
  zoomTo(to: number | "fit" | "in" | "out"): void {
    const fit = this.fitScale(this.natural.width, this.natural.height);
    const current = this.zoom === "fit" ? fit : this.zoom;
    const next = to === "in" ? current * ZOOM_STEP : to === "out" ? current / ZOOM_STEP : to;
    this.zoom = next === "fit" || next <= fit ? "fit" : Math.min(next, ZOOM_MAX);
    const scale = this.zoom === "fit" ? fit : this.zoom;
    this.drawing?.setAttribute("width", String(Math.floor(this.natural.width * scale)));
    this.drawing?.setAttribute("height", String(Math.floor(this.natural.height * scale)));
    this.element.setAttribute("data-zoom-level", this.zoom === "fit" ? "fit" : String(scale));
  }

  /** Highlights the active states and each running stage's lifecycle state. */
  show(state: ChartState): void {
    const active = new Set(state.active);
    for (const [id, element] of this.states)
      element.setAttribute("data-active", String(active.has(id)));
    for (const [key, pill] of this.pills) {
      const [stageId, step] = key.split("\u0000") as [string, string];
      const owner = this.states.get(pill.getAttribute("data-owner") ?? "");
      const on =
        owner?.getAttribute("data-active") === "true" &&
        lifecyclePhases(state.stages[stageId]?.lifecycle).includes(step);
      pill.setAttribute("data-active", String(on));
    }
  }

  /** Marks one stage as the one picked (`data-selected`), or none. */
  select(stageId: string | undefined): void {
    for (const element of this.states.values()) {
      const stage = element.getAttribute("data-stage-node");
      if (stage) element.setAttribute("data-selected", String(stage === stageId));
    }
  }

  /** How each stage ended last (ok, fail, skip, cancelled), from the audit events shown. */
  outcomes(outcomes: ReadonlyMap<string, string>): void {
    for (const element of this.states.values()) {
      const stage = element.getAttribute("data-stage-node");
      if (!stage) continue;
      const outcome = outcomes.get(stage);
      if (outcome) element.setAttribute("data-outcome", outcome);
      else element.removeAttribute("data-outcome");
    }
  }

  private box(node: ChartNode, laid: ElkNode): SVGElement {
    const group = svg("g", {
      class: `state state-${node.type}${node.stage ? " stage" : ""}${node.group ? " group" : ""}${node.children.length || node.sub ? " compound" : ""}`,
      "data-state": node.stage ?? node.id,
      "data-active": "false",
      transform: `translate(${laid.x ?? 0} ${laid.y ?? 0})`,
    });
    if (node.stage) {
      group.setAttribute("data-stage-node", node.stage);
      group.setAttribute("data-selected", "false");
    }
    if (node.description) {
      // An SVG <title> is the group's tooltip, and what a screen reader says of it.
      const title = svg("title");
      title.textContent = `${node.key}: ${node.description}`;
      group.append(title);
    }
    const width = laid.width ?? 0;
    const height = laid.height ?? 0;
    group.append(svg("rect", { width, height, rx: 10, class: "frame" }));
    const label = svg("text", {
      x: 12,
      y: node.children.length || node.sub ? 19 : height / 2 + (node.stage ? -8 : 4),
      class: "label",
    });
    label.textContent =
      node.type === "parallel" ? `${node.key} ∥` : node.group ? groupLabel(node) : node.key;
    group.append(label);
    if (node.stage && !node.children.length && !node.sub) {
      LIFECYCLE.forEach((step, i) => {
        const pill = svg("g", {
          class: "pill",
          "data-state": `${node.stage}.${step}`,
          "data-owner": node.id,
          "data-active": "false",
          transform: `translate(${10 + i * 41} ${height - 28})`,
        });
        pill.append(svg("rect", { width: 38, height: 18, rx: 9 }));
        const text = svg("text", { x: 19, y: 13, "text-anchor": "middle" });
        text.textContent = LIFECYCLE_LABEL[step] ?? step;
        pill.append(text);
        this.pills.set(`${node.stage}\u0000${step}`, pill);
        group.append(pill);
      });
    }
    if (node.stage) group.addEventListener("click", () => this.onPick(node.stage as string));
    this.states.set(node.id, group);
    return group;
  }
}

/** A group's state: `execute_parallel ∥ fail-fast`, and its cap when it has one. */
function groupLabel(node: ChartNode): string {
  const group = node.group as NonNullable<ChartNode["group"]>;
  const capped = group.maxConcurrency < node.children.length;
  return `${node.key} ∥ ${group.policy}${capped ? `, ${group.maxConcurrency} at once` : ""}`;
}

function drawEdge(edge: ElkExtendedEdge): SVGElement {
  const group = svg("g", { class: "edge" });
  for (const section of edge.sections ?? []) {
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
    group.append(
      svg("path", {
        d: points.map((p, i) => `${i ? "L" : "M"} ${p.x} ${p.y}`).join(" "),
        "marker-end": "url(#arrow)",
      }),
    );
  }
  for (const label of edge.labels ?? []) {
    const text = svg("text", { x: label.x ?? 0, y: (label.y ?? 0) + 11, class: "edge-label" });
    text.textContent = label.text ?? "";
    group.append(text);
  }
  return group;
}

function exportButton(download: () => void): HTMLButtonElement {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Export SVG";
  button.title = "download the chart as an SVG file (as stagechart graph --format svg draws it)";
  button.setAttribute("data-export", "svg");
  button.addEventListener("click", download);
  return button;
}

function zoomControls(zoom: (to: "in" | "out" | "fit") => void): HTMLElement {
  const bar = document.createElement("div");
  bar.className = "zoom";
  const labels = { out: "−", fit: "Fit", in: "+" } as const;
  for (const to of ["out", "fit", "in"] as const) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = labels[to];
    button.title = to === "fit" ? "fit the chart to the page" : `zoom ${to}`;
    button.setAttribute("data-zoom", to);
    button.addEventListener("click", () => zoom(to));
    bar.append(button);
  }
  return bar;
}

/** Drag to pan a zoomed-in chart (the viewport scrolls); a click still picks a stage. */
function pannable(viewport: HTMLElement): void {
  let from: { x: number; y: number; left: number; top: number } | undefined;
  viewport.addEventListener("pointerdown", (event) => {
    if (
      viewport.scrollWidth <= viewport.clientWidth &&
      viewport.scrollHeight <= viewport.clientHeight
    )
      return;
    from = {
      x: event.clientX,
      y: event.clientY,
      left: viewport.scrollLeft,
      top: viewport.scrollTop,
    };
  });
  viewport.addEventListener("pointermove", (event) => {
    if (!from || event.buttons !== 1) return;
    viewport.scrollLeft = from.left - (event.clientX - from.x);
    viewport.scrollTop = from.top - (event.clientY - from.y);
  });
  const stop = () => {
    from = undefined;
  };
  viewport.addEventListener("pointerup", stop);
  viewport.addEventListener("pointerleave", stop);
}
