import { ok, type Result } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import type { StepStore } from "./persistence.js";
import type { StoredStatus } from "./run-records.js";
import type { Awaitable } from "./store-port.js";

/** What reading a run's history needs of a store (the SQLite store has it). */
export interface HistoryStore extends Pick<StepStore, "getRun" | "auditOf"> {
  stepsOf(runId: string): { step: number; lastSeq: number; at: string }[];
  snapshotAtStep(runId: string, step: number): unknown;
}

/** `HistoryStore` answered asynchronously, as `RunStore` is (either store). */
export type AsyncHistoryStore = {
  [K in keyof HistoryStore]: (
    ...args: Parameters<HistoryStore[K]>
  ) => Awaitable<ReturnType<HistoryStore[K]>>;
};

/** `runHistory` of a run in a store answered asynchronously: what it reads, read ahead. */
export async function readHistory(
  store: AsyncHistoryStore,
  runId: string,
): Promise<Result<HistoryStep[]>> {
  const [run, audit, steps] = [
    await store.getRun(runId),
    await store.auditOf(runId),
    await store.stepsOf(runId),
  ];
  const snapshots = new Map<number, unknown>();
  for (const { step } of steps) snapshots.set(step, await store.snapshotAtStep(runId, step));
  const readAhead: HistoryStore = {
    getRun: () => run,
    auditOf: () => audit,
    stepsOf: () => steps,
    snapshotAtStep: (_runId, step) => snapshots.get(step),
  };
  return runHistory(readAhead, runId);
}

/** One committed step of a run, as `stagechart history` lists it. */
export interface HistoryStep {
  step: number;
  /** The audit events the step added (`stagechart audit`), none when it added none. */
  seq: { from: number; to: number } | null;
  at: string;
  /** Where the run stood after the step: a stage, a parallel group (`<stage>_parallel`) or an end. */
  state: string | null;
  /** The step's transitions, `from → to (kind)`. */
  transitions: string[];
  /** The run after the step: `running` until it suspends or ends. */
  status: StoredStatus;
}

const ENDINGS: Partial<Record<AuditEvent["type"], StoredStatus>> = {
  RunCompleted: "done",
  RunFailed: "failed",
  RunCancelled: "cancelled",
  RunSuspended: "suspended",
};

/** A run's committed steps, oldest first: what each added to the audit log and where it left the run. */
export function runHistory(store: HistoryStore, runId: string): Result<HistoryStep[]> {
  const run = store.getRun(runId);
  if (!run.ok) return run;
  const events = store.auditOf(runId);
  let before = 0;
  // The log is in seq order and each step adds the events after the last one's: one walk.
  let next = 0;
  return ok(
    store.stepsOf(runId).map(({ step, lastSeq, at }) => {
      const start = next;
      while (next < events.length && (events[next] as AuditEvent).seq <= lastSeq) next++;
      const added = events.slice(start, next);
      const seq = lastSeq > before ? { from: before + 1, to: lastSeq } : null;
      before = lastSeq;
      const ending = added.flatMap((event) => ENDINGS[event.type] ?? []).at(-1);
      return {
        step,
        seq,
        at,
        state: stateOf(store.snapshotAtStep(runId, step)),
        transitions: added.flatMap(describeTransition),
        status: ending ?? "running",
      };
    }),
  );
}

function stateOf(snapshot: unknown): string | null {
  const value = (snapshot as { value?: unknown } | undefined)?.value;
  if (typeof value === "string") return value;
  if (value && typeof value === "object") return Object.keys(value)[0] ?? null;
  return null;
}

function describeTransition(event: AuditEvent): string[] {
  if (event.type !== "SMTransition") return [];
  const names = (v: unknown) => (Array.isArray(v) ? v.join(",") : String(v));
  const { from, to, kind } = event.payload;
  return [`${names(from)} → ${names(to)} (${String(kind)})`];
}
