import type { Actor, AnyStateMachine } from "xstate";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { StagechartError } from "../errors.js";
import type { AuditSink } from "../events/audit.js";
import { CONTROL_POLL_MS, type ControlSettlement, takeControlRequests } from "./live-control.js";
import type { StepStore } from "./persistence.js";

/**
 * The live owner's side of the control queue: takes the run's pending requests now (those queued
 * while it was down are handled as it resumes) and every CONTROL_POLL_MS while the run lives,
 * committing what they audited and their settlements at once. A store that fails here stops
 * the run like any other store failure. The timer to clear when the run ends.
 */
export function watchControlQueue(
  store: StepStore,
  runId: string,
  actor: Actor<AnyStateMachine>,
  run: {
    check(event: PipelineEvent): StagechartError | undefined;
    recorder: AuditSink & { settle(settlement: ControlSettlement): void };
    commit(): void;
    giveUp(error: unknown): void;
  },
): ReturnType<typeof setInterval> {
  // One poll at a time: a store that answers later never has two reading the same requests.
  let polling = false;
  const taken = new Set<number>();
  const take = async () => {
    if (polling || actor.getSnapshot().status !== "active") return;
    polling = true;
    try {
      const send = (event: PipelineEvent) => {
        if (actor.getSnapshot().status === "active") actor.send(event);
      };
      if (await takeControlRequests(store, runId, { ...run, send, taken })) run.commit();
    } catch (error) {
      run.giveUp(error);
    } finally {
      polling = false;
    }
  };
  void take();
  const timer = setInterval(take, CONTROL_POLL_MS);
  timer.unref();
  return timer;
}
