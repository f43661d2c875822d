import type { WebSocket } from "ws";
import type { AsyncRunStore } from "../store/index.js";

/**
 * Reads the store for what changed since the last look — the runs list, and the new audit events
 * of the runs a page watches — and tells the pages. Runs are written by other processes (every
 * `stagechart run`, workers on other machines), so the store, not a process's memory, is where
 * news comes from.
 */
export class StoreWatch {
  private runsSeen = "";
  private readonly watchers = new Map<string, Map<WebSocket, number>>();
  /** The last audit seq each page says it shows of a run, by run. */
  private readonly shownBy = new Map<string, Map<WebSocket, number>>();
  /** The look under way: one at a time, so a slow store is never read twice over. */
  private looking: Promise<void> | undefined;

  constructor(
    private readonly store: () => Promise<AsyncRunStore | undefined>,
    private readonly broadcast: (message: unknown) => void,
  ) {}

  /**
   * A page watches a run: it gets the run's events after `after`, the last one it holds (what
   * was stored between its fetch and this message included); without it, after the last stored.
   */
  async watch(page: WebSocket, runId: string, after?: number): Promise<void> {
    const from = after ?? (await (await this.store())?.lastSeq(runId)) ?? 0;
    if (page.readyState !== page.OPEN) return;
    const pages = this.watchers.get(runId) ?? new Map<WebSocket, number>();
    pages.set(page, from);
    this.watchers.set(runId, pages);
  }

  unwatchAll(page: WebSocket): void {
    for (const pages of this.watchers.values()) pages.delete(page);
    for (const pages of this.shownBy.values()) pages.delete(page);
  }

  /** A page has drawn the run up to audit event `seq` (it fetched what that event changed). */
  shown(page: WebSocket, runId: string, seq: number): void {
    const pages = this.shownBy.get(runId) ?? new Map<WebSocket, number>();
    pages.set(page, Math.max(seq, pages.get(page) ?? 0));
    this.shownBy.set(runId, pages);
  }

  /** Whether every page watching the run shows it up to its last stored event. */
  async allShown(runId: string): Promise<boolean> {
    const last = (await (await this.store())?.lastSeq(runId)) ?? 0;
    const shown = this.shownBy.get(runId);
    return [...(this.watchers.get(runId)?.keys() ?? [])].every(
      (page) => (shown?.get(page) ?? 0) >= last,
    );
  }

  /**
   * Looks at the store once; a call while a look is under way joins that one. A look the store
   * fails (a dropped connection) is given up: the next tick looks again.
   */
  poll(): Promise<void> {
    this.looking ??= this.look()
      .catch(() => {})
      .finally(() => {
        this.looking = undefined;
      });
    return this.looking;
  }

  /** A look that starts after this call, so it sees everything stored before it. */
  async pollAfresh(): Promise<void> {
    await this.looking;
    await this.poll();
  }

  /** Waits for the look under way, if any: the store may close once it is done. */
  async idle(): Promise<void> {
    await this.looking;
  }

  private async look(): Promise<void> {
    const store = await this.store();
    if (!store) return;
    const runs = await store.listRuns();
    const seen = runs.map((r) => `${r.runId} ${r.status} ${r.updatedAt}`).join("\n");
    if (seen !== this.runsSeen) {
      this.runsSeen = seen;
      this.broadcast({ type: "runs", runs });
    }
    for (const [runId, pages] of this.watchers) {
      for (const [page, after] of pages) {
        const events = await store.auditOf(runId, after);
        if (events.length === 0 || !pages.has(page)) continue;
        pages.set(page, events.at(-1)?.seq ?? after);
        page.send(JSON.stringify({ type: "audit", runId, events }));
      }
    }
  }
}
