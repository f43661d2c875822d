import type { RunChanges } from "../inspect/run-changes.js";
import { describeStoredRun } from "../inspect/run-view.js";
import type { RunSummary } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import type { WebhookEvent } from "./webhooks.js";

const ENDED = new Set(["done", "failed", "cancelled"]);

/**
 * Tells of the store's runs that end or come to wait while the server watches, whoever runs them
 * (this process, a worker, a `stagechart run` on the same store): the server's store watch finds
 * them changed in the store, not in a process's memory, so a queued run a worker finishes is told
 * all the same. What the runs were at the watch's first look is the baseline, told of nothing. A
 * run that waits is told once per set of waits (a second grant request later is told again).
 */
export class RunNotices {
  /** What was last told of each run: its end, or the waits it was told of. */
  private readonly told = new Map<string, string>();

  constructor(private readonly notify: (event: WebhookEvent) => void) {}

  /** The store watch's listener: each changed run that ended or waits, told once. */
  readonly changed = async ({ store, runs, first }: RunChanges): Promise<void> => {
    if (first) return;
    for (const run of runs) {
      // A run the store fails to read back is passed over: the others are told all the same.
      const told = await this.newsOf(store, run).catch(() => undefined);
      if (!told || this.told.get(run.runId) === told.key) continue;
      this.told.set(run.runId, told.key);
      this.notify(told.event);
    }
  };

  /** The event a run's new status is, with what it tells (to tell it once); none for a running run. */
  private async newsOf(
    store: RunStore,
    run: RunSummary,
  ): Promise<{ key: string; event: WebhookEvent } | undefined> {
    const base = { runId: run.runId, pipelineId: run.pipelineId, status: run.status };
    if (ENDED.has(run.status)) {
      const record = await store.getRun(run.runId);
      const error = record.ok ? record.value.error : undefined;
      return { key: run.status, event: { type: "run.ended", ...base, ...(error && { error }) } };
    }
    if (run.status !== "suspended") return undefined;
    const view = await describeStoredRun(store, run.runId);
    const waiting = view.ok ? (view.value.waiting ?? []) : [];
    if (waiting.length === 0) return undefined;
    const key = `waiting ${JSON.stringify(waiting)}`;
    return { key, event: { type: "run.waiting", ...base, waiting } };
  }
}
