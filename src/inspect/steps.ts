import type { SqliteStore } from "../store/index.js";
import { actorsOfPersisted, type ChartState, chartStateOf } from "./chart-state.js";

/** One committed step of a run: the audit events it added (up to `lastSeq`) and its time. */
export interface Step {
  step: number;
  lastSeq: number;
  at: string;
}

/** A run as it was after step k: its chart state and its context. */
export interface StepView extends Step {
  state: ChartState;
  context: unknown;
}

/** The committed steps of a run, oldest first. */
export const stepsOf = (store: SqliteStore, runId: string): Step[] => store.stepsOf(runId);

/** The run after step k, from the snapshot that step (or the last before it) committed. */
export function stepView(store: SqliteStore, runId: string, step: number): StepView | undefined {
  const at = store.stepsOf(runId).find((s) => s.step === step);
  if (!at) return undefined;
  const snapshot = store.snapshotAtStep(runId, step) as { context?: unknown } | undefined;
  return {
    ...at,
    state: chartStateOf(actorsOfPersisted(snapshot)),
    context: snapshot?.context,
  };
}
