import type { WebSocket } from "ws";
import type { SqliteStore } from "../store/index.js";

/**
 * Reads the store for what changed since the last look — the runs list, and the new audit events
 * of the runs a page watches — and tells the pages. Runs are written by other processes (every
 * `stagechart run`), so the store, not a process's memory, is where news comes from.
 */
export class StoreWatch {
  private runsSeen = "";
  private readonly watchers = new Map<string, Map<WebSocket, number>>();

  constructor(
    private readonly store: () => SqliteStore | undefined,
    private readonly broadcast: (message: unknown) => void,
  ) {}

  /** A page watches a run: it gets the run's events after those it fetched itself. */
  watch(page: WebSocket, runId: string): void {
    const pages = this.watchers.get(runId) ?? new Map<WebSocket, number>();
    pages.set(page, this.store()?.lastSeq(runId) ?? 0);
    this.watchers.set(runId, pages);
  }

  unwatchAll(page: WebSocket): void {
    for (const pages of this.watchers.values()) pages.delete(page);
  }

  poll(): void {
    const store = this.store();
    if (!store) return;
    const runs = store.listRuns();
    const seen = runs.map((r) => `${r.runId} ${r.status} ${r.updatedAt}`).join("\n");
    if (seen !== this.runsSeen) {
      this.runsSeen = seen;
      this.broadcast({ type: "runs", runs });
    }
    for (const [runId, pages] of this.watchers) {
      for (const [page, after] of pages) {
        const events = store.auditOf(runId, after);
        if (events.length === 0) continue;
        pages.set(page, events.at(-1)?.seq ?? after);
        page.send(JSON.stringify({ type: "audit", runId, events }));
      }
    }
  }
}
