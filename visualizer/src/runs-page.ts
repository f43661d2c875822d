import type { LiveRoot } from "../../src/inspect/live.js";
import type { RunSummary } from "../../src/runtime/run-records.js";
import { h } from "./dom.js";
import { getJson, type News, type PageSocket } from "./net.js";

/**
 * The newest stored runs (the server lists 200), newest first, updating as runs start, move and
 * end (the server sends only the runs that changed); and live machines.
 */
export async function runsPage(root: HTMLElement, socket: PageSocket): Promise<void> {
  const body = h("tbody");
  const machines = h("ul", { class: "machines" });
  const known = new Map<string, RunSummary>();
  // Two runs picked, in the order picked, for the comparison page.
  const picked: string[] = [];
  const compare = h(
    "button",
    { type: "button", "data-compare": "", disabled: true, onclick: () => openComparison() },
    "Compare two runs",
  );
  const openComparison = () => {
    if (picked.length === 2)
      location.assign(`/compare/${picked.map((id) => encodeURIComponent(id)).join("/")}`);
  };
  const pickBox = (runId: string) => {
    const box = h("input", {
      type: "checkbox",
      "aria-label": `compare ${runId}`,
      "data-pick-run": runId,
      checked: picked.includes(runId),
    });
    box.addEventListener("change", () => {
      const at = picked.indexOf(runId);
      if (box.checked && at < 0) picked.push(runId);
      if (!box.checked && at >= 0) picked.splice(at, 1);
      // A third pick replaces the first.
      if (picked.length > 2) {
        const dropped = picked.shift();
        const other = body.querySelector<HTMLInputElement>(
          `[data-pick-run="${CSS.escape(dropped ?? "")}"]`,
        );
        if (other) other.checked = false;
      }
      compare.disabled = picked.length !== 2;
    });
    return box;
  };
  const render = (runs: RunSummary[]) => {
    for (const run of runs) {
      const held = known.get(run.runId);
      if (!held || held.updatedAt <= run.updatedAt) known.set(run.runId, run);
    }
    const newestFirst = [...known.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    body.replaceChildren(
      ...newestFirst.map((r) =>
        h(
          "tr",
          { "data-run": r.runId },
          h("td", { class: "pick" }, pickBox(r.runId)),
          h("td", {}, h("a", { href: `/runs/${encodeURIComponent(r.runId)}` }, r.runId)),
          h("td", {}, h("span", { class: "status", "data-status": r.status }, r.status)),
          h("td", {}, r.pipelineId),
          h("td", { class: "at" }, r.createdAt.slice(0, 19).replace("T", " ")),
          h("td", { class: "at" }, r.updatedAt.slice(0, 19).replace("T", " ")),
        ),
      ),
    );
  };
  const foreign = new Map<string, LiveRoot>();
  // Hidden until the stream brings a machine that is not a run: most servers see none.
  const machinesHeading = h("h2", { hidden: true }, "Other XState machines on the stream");
  const renderMachines = () => {
    machinesHeading.hidden = foreign.size === 0;
    machines.replaceChildren(
      ...[...foreign.values()].map((m) =>
        h(
          "li",
          {},
          h("a", { href: `/machines/${encodeURIComponent(m.rootId)}` }, m.name),
          ` · ${m.status ?? "active"}`,
        ),
      ),
    );
  };
  root.replaceChildren(
    h("div", { class: "runs-head" }, h("h1", {}, "Runs"), compare),
    h(
      "table",
      { class: "runs" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", {}, ""),
          h("th", {}, "run"),
          h("th", {}, "status"),
          h("th", {}, "pipeline"),
          h("th", {}, "started"),
          h("th", {}, "last step"),
        ),
      ),
      body,
    ),
    machinesHeading,
    machines,
  );
  document.getElementById("where")?.replaceChildren("runs");
  // News of runs that changed while the list is fetched is kept: it is listened to first.
  socket.listen((news: News) => {
    if (news.type === "runs") render(news.runs as RunSummary[]);
  });
  render(await getJson<RunSummary[]>("/api/v1/runs"));
  const noteLive = (r: LiveRoot) => {
    if (r.runId) return;
    foreign.set(r.rootId, r);
    renderMachines();
  };
  for (const r of await getJson<LiveRoot[]>("/api/v1/live")) noteLive(r);
  socket.listen((news: News) => {
    if (news.type === "live") noteLive(news.root as LiveRoot);
  });
}
