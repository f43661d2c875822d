import type { RunStore } from "../runtime/store-port.js";
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

/** The run after step k, from the snapshot that step (or the last before it) committed. */
export async function stepView(
  store: RunStore,
  runId: string,
  step: number,
): Promise<StepView | undefined> {
  const at = (await store.stepsOf(runId)).find((s) => s.step === step);
  if (!at) return undefined;
  const snapshot = (await store.snapshotAtStep(runId, step)) as { context?: unknown } | undefined;
  return {
    ...at,
    state: chartStateOf(actorsOfPersisted(snapshot)),
    context: snapshot?.context,
  };
}
