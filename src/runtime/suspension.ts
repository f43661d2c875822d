import type { AnyActorRef } from "xstate";
import type { InputRequest } from "../compiler/ask-stage.js";
import { type StageWait, stageWait } from "../compiler/stage-context.js";
import type { GrantRequest } from "../compiler/stage-types.js";

/** A parked stage somewhere in a run's actor tree, and the actor to send its answer to. */
export interface ParkedStage {
  actor: AnyActorRef;
  wait: StageWait;
}

export interface Survey {
  /** Stages that wait for nothing but an answer from outside. */
  parked: ParkedStage[];
  /** Grant requests being asked right now (an interactor is prompting): answerable too. */
  asking: ParkedStage[];
  /** Some actor is still working: a model or tool call, a backoff, a code stage, a prompt. */
  busy: boolean;
}

/**
 * Walks a run's actor tree. A run is quiescent when stages are parked and nothing else works,
 * so no event will ever come unless somebody answers: that is when a durable run suspends.
 */
export function survey(root: AnyActorRef): Survey {
  const found: Survey = { parked: [], asking: [], busy: false };
  found.busy = isBusy(root, found);
  return found;
}

export const isQuiescent = ({ parked, busy }: Survey): boolean => parked.length > 0 && !busy;

function isBusy(actor: AnyActorRef, found: Survey): boolean {
  const snapshot = actor.getSnapshot();
  if (snapshot.status !== "active") return false;
  if (typeof snapshot.hasTag === "function") {
    const wait = stageWait(snapshot);
    if (wait && snapshot.hasTag("suspended")) {
      found.parked.push({ actor, wait });
      return false;
    }
    if (wait) found.asking.push({ actor, wait });
  }
  // A machine with nothing invoked is waiting on a timer or a transition: still working.
  const children = Object.values((snapshot.children ?? {}) as Record<string, AnyActorRef>);
  if (children.length === 0) return true;
  let busy = false;
  for (const child of children) busy = isBusy(child, found) || busy;
  return busy;
}

/** What a suspended run waits for, as audited and shown: grant requests and deferred gates. */
export type RunWait =
  | ({ kind: "grant" } & GrantRequest)
  | ({ kind: "input" } & Omit<InputRequest, "runId">)
  | { kind: "gate"; stageId: string; stageExecutionId: string };

export function describeWaits(parked: readonly ParkedStage[]): RunWait[] {
  return parked.map(({ wait }): RunWait => {
    if (wait.kind === "grant") return { kind: "grant", ...wait.request };
    if (wait.kind === "ask") {
      const { runId: _runId, ...request } = wait.request;
      return { kind: "input", ...request };
    }
    return { kind: "gate", stageId: wait.stageId, stageExecutionId: wait.stageExecutionId };
  });
}
