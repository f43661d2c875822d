import type { Chart, ChartLayouts } from "../../src/inspect/chart.js";
import { drawChart, type SvgElement } from "../../src/inspect/chart-drawing.js";
import { chartExtent, LEGIBLE_SCALE, laneLabel } from "../../src/inspect/chart-metrics.js";
import { type ChartState, lifecyclePhases } from "../../src/inspect/chart-state.js";
import { type ChartDirection, chartSvg, fittedDirection } from "../../src/inspect/chart-svg.js";
import { svg } from "./dom.js";

/** Zoom steps of the chart, relative to its natural size; "fit" shows all of it. */
const ZOOM_STEP = 1.25;
const ZOOM_MAX = 3;

/**
 * The statechart, as the server laid it out (src/inspect/chart-layout.ts), drawn as
 * src/inspect/chart-drawing.ts draws it for `graph --format svg` too. Each state carries
 * `data-state` (its stage id, or its full id) and, while active, `data-active="true"`.
 */
export class ChartView {
  readonly element: HTMLElement;
  private readonly states = new Map<string, SVGElement>();
  /** Each LLM stage's lifecycle segments, and the caption naming the one it is in, by its state's id. */
  private readonly pills = new Map<string, SVGElement[]>();
  private readonly phases = new Map<string, SVGElement>();
  private onPick: (stageId: string) => void = () => {};
  private readonly viewport: HTMLElement;
  private drawing: SVGElement | undefined;
  private natural = { width: 0, height: 0 };
  /** The layout drawn: left to right, or top to bottom. */
  private direction: ChartDirection = "right";
  /** The zoom factor, or "fit" (the whole chart, unless that would make its names illegible). */
  private zoom: number | "fit" = "fit";

  constructor(
    private readonly chart: Chart,
    private readonly layouts: ChartLayouts,
  ) {
    this.element = document.createElement("div");
    this.element.className = "chart";
    this.viewport = document.createElement("div");
    this.viewport.className = "chart-viewport";
    const zoom = zoomControls((to) => this.zoomTo(to));
    zoom.append(exportButton(() => this.download()));
    const tools = document.createElement("div");
    tools.className = "chart-tools";
    tools.append(legend(), zoom);
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
    const root = toDom(drawChart(this.chart, laid));
    this.states.clear();
    this.pills.clear();
    this.phases.clear();
    for (const state of root.querySelectorAll<SVGElement>("g.state")) {
      state.setAttribute("data-active", "false");
      const stage = state.getAttribute("data-stage-node");
      if (stage) {
        state.setAttribute("data-selected", "false");
        state.addEventListener("click", () => this.onPick(stage));
      }
      this.states.set(state.getAttribute("data-node") as string, state);
    }
    for (const pill of root.querySelectorAll<SVGElement>("g.pill")) {
      pill.setAttribute("data-active", "false");
      const owner = pill.getAttribute("data-owner") as string;
      this.pills.set(owner, [...(this.pills.get(owner) ?? []), pill]);
    }
    for (const phase of root.querySelectorAll<SVGElement>("text.phase"))
      this.phases.set(phase.getAttribute("data-owner") as string, phase);
    this.viewport.replaceChildren(root);
    this.drawing = root;
    const { width, height } = chartExtent(laid);
    this.natural = { width, height };
    this.zoomTo(this.zoom);
  }

  /** The scale that shows a chart of this size whole in the viewport, never above 1. */
  private wholeScale(width: number, height: number): number {
    const room = this.room();
    return Math.min(
      1,
      (room.width || width) / Math.max(width, 1),
      room.height / Math.max(height, 1),
    );
  }

  /**
   * Fit: the chart whole in the viewport, unless its states' names would be drawn smaller than
   * 11 px: then as small as they stay legible, and the viewport scrolls.
   */
  private fitScale(width: number, height: number): number {
    return Math.max(this.wholeScale(width, height), Math.min(1, LEGIBLE_SCALE));
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

  /**
   * Fits the chart (see `fitScale`), or zooms it: in up to three times its natural size, out
   * down to the scale that shows it whole.
   */
  zoomTo(to: number | "fit" | "in" | "out"): void {
    const { width, height } = this.natural;
    const fit = this.fitScale(width, height);
    const least = Math.min(fit, this.wholeScale(width, height));
    const current = this.zoom === "fit" ? fit : this.zoom;
    const next = to === "in" ? current * ZOOM_STEP : to === "out" ? current / ZOOM_STEP : to;
    this.zoom =
      next === "fit" || Math.abs(next - fit) < 1e-6
        ? "fit"
        : Math.min(Math.max(next, least), ZOOM_MAX);
    const scale = this.zoom === "fit" ? fit : this.zoom;
    this.drawing?.setAttribute("width", String(Math.floor(width * scale)));
    this.drawing?.setAttribute("height", String(Math.floor(height * scale)));
    this.element.setAttribute("data-zoom-level", this.zoom === "fit" ? "fit" : String(scale));
  }

  /**
   * Highlights the active states, each running LLM stage's lifecycle state (its segment lit, its
   * name beside the stage's), and, given the run's status, a suspended run's waiting stages.
   */
  show(state: ChartState, status?: string): void {
    if (status) this.drawing?.setAttribute("data-run-status", status);
    else this.drawing?.removeAttribute("data-run-status");
    const active = new Set(state.active);
    for (const [id, element] of this.states) {
      element.setAttribute("data-active", String(active.has(id)));
      const items = state.items?.[id];
      const stage = element.getAttribute("data-stage-node");
      const label = element.querySelector("text.label");
      if (items && stage && label) {
        label.textContent = laneLabel(stage, items.total);
        element.setAttribute("data-items", `${items.settled}/${items.total}`);
      }
    }
    for (const [owner, pills] of this.pills) {
      const stageId = this.states.get(owner)?.getAttribute("data-stage-node") ?? "";
      const phases = active.has(owner) ? lifecyclePhases(state.stages[stageId]?.lifecycle) : [];
      let caption = "";
      for (const pill of pills) {
        const on = phases.includes(
          (pill.getAttribute("data-state") ?? "").slice(stageId.length + 1),
        );
        pill.setAttribute("data-active", String(on));
        if (on) caption = pill.getAttribute("data-phase") ?? "";
      }
      const phase = this.phases.get(owner);
      if (phase) phase.textContent = caption;
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
}

/** The drawing's elements as SVG DOM. */
function toDom(element: SvgElement): SVGElement {
  const node = svg(element.tag, element.attrs);
  for (const child of element.children)
    node.append(typeof child === "string" ? child : toDom(child));
  return node;
}

/** What the chart's marks mean: the ends' colours, a stage's failure marker, the entry's dot. */
function legend(): HTMLElement {
  const bar = document.createElement("div");
  bar.className = "chart-legend";
  const items: Array<[string, string]> = [
    ["entry", "start"],
    ["done", "done"],
    ["failed", "failed"],
    ["cancelled", "cancelled"],
    ["suspended", "suspended"],
    ["fails", "fails → failed (hover a stage for its route)"],
  ];
  for (const [mark, text] of items) {
    const item = document.createElement("span");
    item.className = "legend-item";
    item.setAttribute("data-legend", mark);
    item.textContent = text;
    bar.append(item);
  }
  return bar;
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
