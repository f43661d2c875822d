import { describeStoredRun } from "../inspect/run-view.js";
import type { RunSummary } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import type { WebhookEvent } from "./webhooks.js";

const ENDED = new Set(["done", "failed", "cancelled"]);

/** Every this many looks the newest runs are read whole, not only those updated since the last. */
const FULL_LOOK_EVERY = 20;
const LOOK_LIMIT = 500;

/**
 * Tells of the store's runs that end or come to wait while the server watches, whoever runs them
 * (this process, a worker, a `stagechart run` on the same store): the store, not a process's
 * memory, is where a run's status is, so a queued run a worker finishes is told all the same.
 * What the runs were at the first look is the baseline, told of nothing. A run that waits is told
 * once per set of waits (a second grant request later is told again).
 */
export class RunNotices {
  /** Each run's status and last update, as last looked at. */
  private readonly seen = new Map<string, string>();
  /** What was last told of each run: its end, or the waits it was told of. */
  private readonly told = new Map<string, string>();
  private lastUpdate: string | undefined;
  private looks = 0;
  private looking: Promise<void> | undefined;

  constructor(
    private readonly store: RunStore,
    private readonly notify: (event: WebhookEvent) => void,
  ) {}

  /** One look at the store; a call while one is under way joins it. A failing store is tried again next time. */
  poll(): Promise<void> {
    this.looking ??= this.look()
      .catch(() => {})
      .finally(() => {
        this.looking = undefined;
      });
    return this.looking;
  }

  async idle(): Promise<void> {
    await this.looking;
  }

  private async look(): Promise<void> {
    const first = this.lastUpdate === undefined;
    const whole = first || this.looks % FULL_LOOK_EVERY === 0;
    const runs = await this.store.listRuns(
      whole ? { limit: LOOK_LIMIT } : { limit: LOOK_LIMIT, updatedSince: this.lastUpdate },
    );
    this.looks += 1;
    for (const run of runs) {
      if (run.updatedAt > (this.lastUpdate ?? "")) this.lastUpdate = run.updatedAt;
      const change = `${run.status} ${run.updatedAt}`;
      if (this.seen.get(run.runId) === change) continue;
      this.seen.set(run.runId, change);
      if (first) continue;
      const told = await this.newsOf(run);
      if (!told || this.told.get(run.runId) === told.key) continue;
      this.told.set(run.runId, told.key);
      this.notify(told.event);
    }
    this.lastUpdate ??= "";
  }

  /** The event a run's new status is, with what it tells (to tell it once); none for a running run. */
  private async newsOf(run: RunSummary): Promise<{ key: string; event: WebhookEvent } | undefined> {
    const base = { runId: run.runId, pipelineId: run.pipelineId, status: run.status };
    if (ENDED.has(run.status)) {
      const record = await this.store.getRun(run.runId);
      const error = record.ok ? record.value.error : undefined;
      return { key: run.status, event: { type: "run.ended", ...base, ...(error && { error }) } };
    }
    if (run.status !== "suspended") return undefined;
    const view = await describeStoredRun(this.store, run.runId);
    const waiting = view.ok ? (view.value.waiting ?? []) : [];
    if (waiting.length === 0) return undefined;
    const key = `waiting ${JSON.stringify(waiting)}`;
    return { key, event: { type: "run.waiting", ...base, waiting } };
  }
}
