import type { Actor, AnyStateMachine } from "xstate";
import type { RunHandle } from "../../../src/runtime/launch.js";

/** The actor of a run that is still live (a handle lets go of it once its result settles). */
export function liveActor(handle: RunHandle): Actor<AnyStateMachine> {
  if (!handle.actor) throw new Error(`run ${handle.runId} has already settled`);
  return handle.actor;
}
