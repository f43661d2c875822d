import type { RunView } from "../../src/inspect/run-view.js";
import type { RunSummary } from "../../src/runtime/run-records.js";
import { h } from "./dom.js";
import { ApiError, getJson, type News, type PageSocket } from "./net.js";

/** How often a page waiting for its run asks again, news or not (a missed message, a restart). */
const ASK_AGAIN_MS = 1000;

/**
 * The run, once the server has it. A page opened before its run starts (a link printed before
 * the run, a queued run not claimed yet) says it waits and asks again whenever the server tells
 * of a run with this id, and every second; any other refusal is the page's error.
 */
export async function runWhenThere(
  root: HTMLElement,
  runId: string,
  socket: PageSocket,
): Promise<RunView> {
  const api = `/api/v1/runs/${encodeURIComponent(runId)}`;
  let wake: () => void = () => {};
  const stop = socket.listen((news: News) => {
    if (news.type === "runs" && (news.runs as RunSummary[]).some((r) => r.runId === runId)) wake();
  });
  try {
    for (;;) {
      try {
        return await getJson<RunView>(api);
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== "Session/RunNotFound") throw error;
      }
      if (!root.querySelector("[data-waiting]")) {
        root.replaceChildren(
          h(
            "p",
            { class: "waiting", "data-waiting": runId, role: "status" },
            `waiting for run ${runId}…`,
          ),
        );
        document.getElementById("where")?.replaceChildren(`waiting · ${runId}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ASK_AGAIN_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    stop();
  }
}
