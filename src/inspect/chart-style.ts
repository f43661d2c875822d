/**
 * The chart's styles, the one copy: `graph --format svg` puts them inside the SVG it prints, and
 * the page's build appends them to its stylesheet (visualizer/build.mjs; the page's
 * Content-Security-Policy allows no inline style). Every rule is under `.stagechart-chart`, the
 * drawing's root, so nothing else on the page is touched. The rules with `data-active`,
 * `data-outcome`, `data-selected` and `data-run-status` are a run's highlights, which only the
 * page sets.
 */
const RULES = `
.stagechart-chart { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 12px; }
.stagechart-chart .background { fill: #fff; }

.stagechart-chart .frame { fill: #fff; stroke: #98a2b3; stroke-width: 1.2; }
.stagechart-chart .compound > .frame { fill: #f8f9fc; }
.stagechart-chart .frame-inner { fill: none; stroke: #c3c9d6; stroke-width: 1; }
.stagechart-chart .state-parallel > .frame,
.stagechart-chart .group > .frame { fill: #f3f5ff; stroke: #9fb0ef; stroke-dasharray: 5 3; }
.stagechart-chart .kind-llm > .frame { stroke: #8b9bd9; }
.stagechart-chart .kind-code > .frame,
.stagechart-chart .kind-command > .frame { fill: #fafbfc; stroke: #7d8799; }
.stagechart-chart .kind-ask > .frame { fill: #fffaf0; stroke: #d49a3a; }
.stagechart-chart .label { font-size: 14px; font-weight: 600; fill: #1d2433; }
.stagechart-chart .badge rect { fill: #eef0f4; stroke: #d0d5dd; }
.stagechart-chart .badge text { font-size: 11px; fill: #475467; }
.stagechart-chart .kind-ask .badge rect { fill: #fdf0d5; stroke: #e8c27a; }
.stagechart-chart .pill rect { fill: #e4e7ec; }
.stagechart-chart .phase { font-size: 11px; font-weight: 600; fill: #3b5bdb; }

.stagechart-chart .state-final > .frame { stroke-width: 2; }
.stagechart-chart [data-end="done"] > .frame { stroke: #2b8a3e; }
.stagechart-chart [data-end="done"] > .label { fill: #2b8a3e; }
.stagechart-chart [data-end="failed"] > .frame { stroke: #c92a2a; }
.stagechart-chart [data-end="failed"] > .label { fill: #c92a2a; }
.stagechart-chart [data-end="cancelled"] > .frame { stroke: #667085; stroke-dasharray: 4 3; }
.stagechart-chart [data-end="cancelled"] > .label { fill: #667085; }
.stagechart-chart .initial circle { fill: #1d2433; }

.stagechart-chart .edge path { fill: none; stroke: #98a2b3; stroke-width: 1.3; }
.stagechart-chart .arrowhead { fill: #98a2b3; }
.stagechart-chart .arrowhead-fail { fill: #c92a2a; }
.stagechart-chart .edge-label { font-size: 12px; fill: #475467; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.stagechart-chart .fails-mark { fill: #fff; stroke: #c92a2a; stroke-width: 1.2; }
.stagechart-chart .fails-cross { fill: none; stroke: #c92a2a; stroke-width: 1.4; }
.stagechart-chart .failure-edge { display: none; fill: none; stroke: #c92a2a; stroke-width: 1.4; stroke-dasharray: 5 3; }
.stagechart-chart .state:hover > .fails > .failure-edge,
.stagechart-chart .state[data-selected="true"] > .fails > .failure-edge,
.stagechart-chart .state[data-outcome="fail"] > .fails > .failure-edge { display: inline; }

.stagechart-chart .stage { cursor: pointer; }
.stagechart-chart .state[data-active="true"] > .frame { stroke: #3b5bdb; stroke-width: 2.5; fill: #e7ecff; }
.stagechart-chart .compound[data-active="true"] > .frame { fill: #f1f4ff; }
.stagechart-chart .state[data-active="true"] > .label { fill: #3b5bdb; }
.stagechart-chart .pill[data-active="true"] rect { fill: #3b5bdb; }
.stagechart-chart [data-outcome="ok"] > .frame { stroke: #2b8a3e; }
.stagechart-chart [data-outcome="fail"] > .frame { stroke: #c92a2a; fill: #fdecec; }
.stagechart-chart [data-outcome="cancelled"] > .frame { stroke: #98a2b3; fill: #f2f4f7; stroke-dasharray: 4 3; }
.stagechart-chart [data-outcome="cancelled"] > .label { fill: #98a2b3; text-decoration: line-through; }
.stagechart-chart [data-end="done"][data-active="true"] > .frame { stroke: #2b8a3e; fill: #e6f4ea; }
.stagechart-chart [data-end="done"][data-active="true"] > .label { fill: #2b8a3e; }
.stagechart-chart [data-end="failed"][data-active="true"] > .frame { stroke: #c92a2a; fill: #fdecec; }
.stagechart-chart [data-end="failed"][data-active="true"] > .label { fill: #c92a2a; }
.stagechart-chart [data-end="cancelled"][data-active="true"] > .frame { stroke: #667085; fill: #eaecf0; }
.stagechart-chart [data-end="cancelled"][data-active="true"] > .label { fill: #475467; }
.stagechart-chart[data-run-status="suspended"] .stage[data-active="true"] > .frame { stroke: #b35c00; fill: #fff3e0; }
.stagechart-chart[data-run-status="suspended"] .stage[data-active="true"] > .label { fill: #b35c00; }
.stagechart-chart .stage[data-selected="true"] > .frame { filter: drop-shadow(0 0 4px #3b5bdb); stroke-width: 3; }
`;

/** The rules, one a line, as both the page's stylesheet and the exported SVG carry them. */
export const CHART_STYLE = `${RULES.trim()}\n`;
