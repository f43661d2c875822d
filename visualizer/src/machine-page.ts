import type { Chart, ChartLayouts } from "../../src/inspect/chart.js";
import { activeIds } from "../../src/inspect/chart-state.js";
import type { LiveRoot } from "../../src/inspect/live.js";
import { ChartView } from "./chart-view.js";
import { h } from "./dom.js";
import { getJson, type News, type PageSocket } from "./net.js";

/** Any XState app's machine, drawn from the definition its inspector sent, live. */
export async function machinePage(
  root: HTMLElement,
  rootId: string,
  socket: PageSocket,
): Promise<void> {
  const graph = await getJson<{ pipeline: Chart; layouts: ChartLayouts }>(
    `/api/v1/live/${encodeURIComponent(rootId)}/graph`,
  );
  const chart = new ChartView(graph.pipeline, graph.layouts);
  const value = h("pre", { class: "context" });
  root.replaceChildren(
    h("h1", {}, graph.pipeline.root.key),
    chart.element,
    h("h2", {}, "State"),
    value,
  );
  chart.draw();
  const show = (r: LiveRoot) => {
    chart.show({ active: activeIds(graph.pipeline.root.id, r.value), stages: {} });
    value.textContent = JSON.stringify(r.value, null, 2);
  };
  const known = (await getJson<LiveRoot[]>("/api/v1/live")).find((r) => r.rootId === rootId);
  if (known) show(known);
  socket.listen((news: News) => {
    if (news.type === "live" && (news.root as LiveRoot).rootId === rootId)
      show(news.root as LiveRoot);
  });
}
