import type { AnyActorRef } from "xstate";

/**
 * The session's cap on stages that work at once, counted across parallel groups and
 * sub-pipelines (a group's own `maxConcurrency` still applies within it). A stage that does work
 * — an LLM stage, a code or command stage — takes a slot before it starts and keeps it until its
 * actor ends (done, failed, cancelled, stopped or crashed) or parks waiting for an answer from
 * outside; it takes one again when it goes on. Slots live in memory only: a resumed run takes
 * them afresh as its restored stages go back to work.
 */
export interface StageSlots {
  /**
   * Takes a slot for stage execution `owner`, whose actor is `holder`: undefined when it holds
   * one (already, or now), else a promise that settles once it does — or rejects if `holder`
   * ends while it waits.
   */
  hold(owner: string, holder: AnyActorRef): Promise<void> | undefined;
}

/** `work` once `owner` holds a slot: at once, without a promise in between, when it does. */
export function withSlot<T>(
  slots: StageSlots | undefined,
  owner: string,
  holder: AnyActorRef | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const waiting = holder ? slots?.hold(owner, holder) : undefined;
  return waiting ? waiting.then(work) : work();
}
