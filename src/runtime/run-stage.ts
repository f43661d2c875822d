import { type Actor, createActor, type Snapshot, toPromise } from "xstate";
import { createStageMachine } from "../compiler/stage-machine.js";
import type { StageInput, StageResult } from "../compiler/stage-types.js";
import type { Host } from "./host.js";
import { createStageServices } from "./stage-services.js";

export type StageMachine = ReturnType<typeof createStageMachine>;
export type StageActor = Actor<StageMachine>;

/** The lifecycle machine bound to a host: a plain XState machine. */
export function stageMachineFor(host: Host): StageMachine {
  return createStageMachine(createStageServices(host));
}

/**
 * An actor for one stage execution, not yet started. Pass `snapshot` (from
 * `actor.getPersistedSnapshot()`) to continue a stage where it stopped.
 */
export function createStageActor(
  host: Host,
  input: StageInput,
  options: { snapshot?: Snapshot<unknown> } = {},
): StageActor {
  return createActor(stageMachineFor(host), {
    input,
    ...(options.snapshot && { snapshot: options.snapshot }),
  });
}

/** Runs one stage execution to its end and returns its StageResult. */
export async function runStage(host: Host, input: StageInput): Promise<StageResult> {
  const actor = createStageActor(host, input);
  actor.start();
  return toPromise(actor);
}
