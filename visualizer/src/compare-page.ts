import type { Chart, ChartLayouts } from "../../src/inspect/chart.js";
import type { PathMark, RunDiff, StageFigures } from "../../src/inspect/run-diff.js";
import { formatDuration } from "../../src/inspect/run-timing.js";
import { ChartView } from "./chart-view.js";
import { h } from "./dom.js";
import { getJson } from "./net.js";

/**
 * Two runs of one pipeline side by side, as the server compares them (`GET /api/v1/compare/a/b`):
 * where their paths part, the chart with each run's path marked, and each stage's durations and
 * tokens with b − a.
 */
export async function comparePage(root: HTMLElement, a: string, b: string): Promise<void> {
  document.getElementById("where")?.replaceChildren(`compare ${a} · ${b}`);
  const head = h("h1", {}, "Compare runs");
  root.replaceChildren(head, h("p", { class: "hint" }, "comparing…"));
  let diff: RunDiff;
  try {
    diff = await getJson<RunDiff>(
      `/api/v1/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`,
    );
  } catch (error) {
    root.replaceChildren(
      head,
      h("p", { class: "error", "data-compare-error": "" }, (error as Error).message),
    );
    return;
  }
  const chartHost = h("div", { class: "chart-host" });
  root.replaceChildren(
    head,
    h(
      "section",
      { class: "compare-runs" },
      runLabel("a", diff.a.runId, diff.a.status),
      runLabel("b", diff.b.runId, diff.b.status),
      h("span", { class: "facts" }, diff.pipelineId),
    ),
    h("p", { class: "compare-summary", "data-divergence": "" }, ...divergenceText(diff)),
    ...(diff.forked ? [h("p", { class: "facts", "data-forked": "" }, forkText(diff))] : []),
    ...(diff.sameDefinition
      ? []
      : [
          h(
            "p",
            { class: "facts" },
            "The two ran different versions of the pipeline's files: a change may explain a difference.",
          ),
        ]),
    chartHost,
    pathLegend(),
    stageTable(diff),
  );
  try {
    const graph = await getJson<{ pipeline: Chart; layouts: ChartLayouts }>(
      `/api/v1/runs/${encodeURIComponent(a)}/graph`,
    );
    const chart = new ChartView(graph.pipeline, graph.layouts);
    chartHost.replaceChildren(chart.element);
    chart.draw();
    markPaths(chart.element, diff);
  } catch (error) {
    chartHost.replaceChildren(h("p", { class: "error" }, `No chart: ${(error as Error).message}`));
  }
}

function runLabel(side: "a" | "b", runId: string, status: string): HTMLElement {
  return h(
    "span",
    { class: "compare-run", "data-side": side },
    h("span", { class: "side" }, side.toUpperCase()),
    h("a", { href: `/runs/${encodeURIComponent(runId)}` }, runId),
    h("span", { class: "status", "data-status": status }, status),
  );
}

function divergenceText(diff: RunDiff): Array<string | HTMLElement> {
  const { divergence } = diff;
  if (!divergence) return ["Same path: the two runs did the same things in the same order."];
  const said = (side: "a" | "b", mark: PathMark | undefined) =>
    h(
      "span",
      { "data-divergence-side": side },
      mark
        ? `${mark.step === undefined ? "" : `step ${mark.step} of `}${side.toUpperCase()}: ${mark.text}`
        : `${side.toUpperCase()}: nothing more`,
    );
  return ["The paths part at ", said("a", divergence.a), " against ", said("b", divergence.b), "."];
}

function forkText(diff: RunDiff): string {
  const { forked } = diff;
  if (!forked) return "";
  const [fork, source] = forked.source === "a" ? ["B", "A"] : ["A", "B"];
  const set = Object.entries(forked.set ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${fork} was forked from ${source} at step ${forked.step}${set.length ? `, with ${set.join(", ")}` : ""}: compared from there; the stages before it ran in ${source} only.`;
}

/** Each stage box of the chart marked with the runs that went through it. */
function markPaths(chart: HTMLElement, diff: RunDiff): void {
  const inA = new Set(diff.a.visited);
  const inB = new Set(diff.b.visited);
  const parted = diff.divergence?.a?.stage ?? diff.divergence?.b?.stage;
  for (const state of chart.querySelectorAll<SVGElement>("[data-state]")) {
    const stage = state.getAttribute("data-state") ?? "";
    const path = inA.has(stage) ? (inB.has(stage) ? "both" : "a") : inB.has(stage) ? "b" : "";
    if (path) state.setAttribute("data-path", path);
    if (parted && parted.split("/").at(-1) === stage) state.setAttribute("data-diverged", "true");
  }
}

function pathLegend(): HTMLElement {
  return h(
    "p",
    { class: "path-legend" },
    ...(["both", "a", "b"] as const).map((path) =>
      h(
        "span",
        {},
        h("i", { class: "path-swatch", "data-path": path }),
        path === "both" ? "both runs" : `${path.toUpperCase()} only`,
      ),
    ),
    h("span", {}, h("i", { class: "path-swatch", "data-diverged": "true" }), "where they part"),
  );
}

/** Per stage: durations, tokens and model turns of each run, and b − a. */
function stageTable(diff: RunDiff): HTMLElement {
  const figure = (f: StageFigures | undefined, pick: (f: StageFigures) => string) =>
    h("td", { class: "num" }, f ? pick(f) : "—");
  const delta = (what: string, value: number | undefined, show: (n: number) => string) =>
    h(
      "td",
      { class: "num delta", "data-delta": what, "data-sign": Math.sign(value ?? 0) },
      value === undefined
        ? "—"
        : `${value > 0 ? "+" : value < 0 ? "−" : "±"}${show(Math.abs(value))}`,
    );
  const ms = (f: StageFigures) => formatDuration(f.durationMs);
  const tokens = (f: StageFigures) => String(f.tokens);
  const rows = diff.stages.map((s) =>
    h(
      "tr",
      { "data-stage": s.stage },
      h("td", {}, s.stage),
      figure(s.a, ms),
      figure(s.b, ms),
      delta("duration", s.durationDeltaMs, formatDuration),
      figure(s.a, tokens),
      figure(s.b, tokens),
      delta("tokens", s.tokenDelta, String),
      figure(s.a, (f) => `${f.turns}`),
      figure(s.b, (f) => `${f.turns}`),
    ),
  );
  return h(
    "table",
    { class: "compare-stages", "data-compare-stages": "" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...[
          "stage",
          "A time",
          "B time",
          "Δ time",
          "A tokens",
          "B tokens",
          "Δ tokens",
          "A turns",
          "B turns",
        ].map((label) => h("th", {}, label)),
      ),
    ),
    h(
      "tbody",
      {},
      ...rows,
      h(
        "tr",
        { class: "total", "data-stage": "" },
        h("td", {}, "the run"),
        h("td", { class: "num" }, formatDuration(diff.a.durationMs)),
        h("td", { class: "num" }, formatDuration(diff.b.durationMs)),
        delta("duration", diff.durationDeltaMs, formatDuration),
        h("td", { class: "num" }, String(diff.a.tokens)),
        h("td", { class: "num" }, String(diff.b.tokens)),
        delta("tokens", diff.tokenDelta, String),
        h("td", {}),
        h("td", {}),
      ),
    ),
  );
}
