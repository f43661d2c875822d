import type { WebSocket } from "ws";
import type { RunSummary } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import type { RunChangeListener } from "./run-changes.js";

/** The runs a page lists: the newest this many, and any older one that changes while it is open. */
export const RUN_LIST_LIMIT = 200;

/**
 * Every this many looks the newest runs are read whole, not only those updated after the last
 * timestamp seen: a change stored with an earlier timestamp than one already seen (a slower
 * commit, another machine's clock) is told within this many looks all the same.
 */
export const FULL_LOOK_EVERY = 25;

const changeOf = (run: RunSummary) => `${run.status} ${run.updatedAt}`;

/**
 * Reads the store for what changed since the last look — the runs updated since, and the new
 * audit events of the run each page watches — and tells the pages only that, and the runs that
 * changed to `onRunsChanged` (`stagechart serve`'s webhooks). Runs are written by other processes
 * (every `stagechart run`, workers on other machines), so the store, not a process's memory, is
 * where news comes from: this is the one place a server polls it for changed runs.
 */
export class StoreWatch {
  /** What the pages were last told of each run: its status and last update. */
  private readonly told = new Map<string, string>();
  /** The latest update seen; undefined until the first look. */
  private lastUpdate: string | undefined;
  private looks = 0;
  /** The run each page watches (the last it asked for: one at a time). */
  private readonly watching = new Map<WebSocket, string>();
  private readonly watchers = new Map<string, Map<WebSocket, number>>();
  /** The last audit seq each page says it shows of a run, by run. */
  private readonly shownBy = new Map<string, Map<WebSocket, number>>();
  /** The look under way: one at a time, so a slow store is never read twice over. */
  private looking: Promise<void> | undefined;

  constructor(
    private readonly store: () => Promise<RunStore | undefined>,
    private readonly broadcast: (message: unknown) => void,
    private readonly onRunsChanged?: RunChangeListener,
  ) {}

  /**
   * A page watches a run: it gets the run's events after `after`, the last one it holds (what
   * was stored between its fetch and this message included); without it, after the last stored.
   * A page watches one run: watching another ends its earlier watch.
   */
  async watch(page: WebSocket, runId: string, after?: number): Promise<void> {
    this.watching.set(page, runId);
    const from = after ?? (await this.lastSeq(runId));
    if (page.readyState !== page.OPEN || this.watching.get(page) !== runId) return;
    this.forget(page);
    this.watching.set(page, runId);
    const pages = this.watchers.get(runId) ?? new Map<WebSocket, number>();
    pages.set(page, from);
    this.watchers.set(runId, pages);
  }

  /** The pages watching a run now. */
  pagesWatching(runId: string): Iterable<WebSocket> {
    return this.watchers.get(runId)?.keys() ?? [];
  }

  unwatchAll(page: WebSocket): void {
    this.forget(page);
  }

  /** How many (run, page) watches there are: what each look reads audit events for. */
  get watchCount(): number {
    return [...this.watchers.values()].reduce((count, pages) => count + pages.size, 0);
  }

  private forget(page: WebSocket): void {
    this.watching.delete(page);
    for (const byRun of [this.watchers, this.shownBy])
      for (const [runId, pages] of byRun)
        if (pages.delete(page) && pages.size === 0) byRun.delete(runId);
  }

  /** A page has drawn the run up to audit event `seq` (it fetched what that event changed). */
  shown(page: WebSocket, runId: string, seq: number): void {
    const pages = this.shownBy.get(runId) ?? new Map<WebSocket, number>();
    pages.set(page, Math.max(seq, pages.get(page) ?? 0));
    this.shownBy.set(runId, pages);
  }

  /** The seq of the run's last stored event; 0 before the first (or with no store yet). */
  async lastSeq(runId: string): Promise<number> {
    return (await (await this.store())?.lastSeq(runId)) ?? 0;
  }

  /** Whether every page watching the run shows it up to event `last`. */
  allShownUpTo(runId: string, last: number): boolean {
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
    await this.lookAtRuns(store);
    for (const [runId, pages] of this.watchers) {
      for (const [page, after] of pages) {
        const events = await store.auditOf(runId, after);
        if (events.length === 0 || !pages.has(page)) continue;
        pages.set(page, events.at(-1)?.seq ?? after);
        page.send(JSON.stringify({ type: "audit", runId, events }));
      }
    }
  }

  /**
   * Tells the pages (`runs`: those runs only) and `onRunsChanged` the runs that changed since the
   * last look. A listener that fails costs it that news, never the pages theirs.
   */
  private async lookAtRuns(store: RunStore): Promise<void> {
    const first = this.lastUpdate === undefined;
    const whole = first || this.looks % FULL_LOOK_EVERY === 0;
    const runs = await store.listRuns(
      whole ? { limit: RUN_LIST_LIMIT } : { limit: RUN_LIST_LIMIT, updatedSince: this.lastUpdate },
    );
    this.looks += 1;
    const changed = runs.filter((run) => this.told.get(run.runId) !== changeOf(run));
    for (const run of changed) {
      this.told.set(run.runId, changeOf(run));
      if (run.updatedAt > (this.lastUpdate ?? "")) this.lastUpdate = run.updatedAt;
    }
    this.lastUpdate ??= "";
    if (changed.length === 0) return;
    this.broadcast({ type: "runs", runs: changed });
    try {
      await this.onRunsChanged?.({ store, runs: changed, first });
    } catch {
      // Its own to report: the pages' audit events are read all the same.
    }
  }
}
