import { type Actor, createActor, type Snapshot, toPromise } from "xstate";
import { createStageMachine } from "../compiler/stage-machine.js";
import type { StageInput, StageResult } from "../compiler/stage-types.js";
import type { Host } from "./host.js";
import { damagedSnapshot, restoreProblem, stageAsCompiled } from "./snapshot-shape.js";
import { createStageServices } from "./stage-services.js";

export type StageMachine = ReturnType<typeof createStageMachine>;
export type StageActor = Actor<StageMachine>;

/** The lifecycle machine bound to a host: a plain XState machine. */
export function stageMachineFor(host: Host): StageMachine {
  return createStageMachine(createStageServices(host));
}

/**
 * An actor for one stage execution, not yet started. Pass `snapshot` (from
 * `actor.getPersistedSnapshot()`) to continue a stage where it stopped: one stored by an earlier
 * stage machine is converted first, as a run's is (`stageAsCompiled`). Throws
 * `Session/SnapshotCorrupt` when the snapshot does not restore into a stage that can go on.
 */
export function createStageActor(
  host: Host,
  input: StageInput,
  options: { snapshot?: Snapshot<unknown> } = {},
): StageActor {
  const { snapshot } = options;
  if (!snapshot) return createActor(stageMachineFor(host), { input });
  const corrupt = (problem: string) =>
    damagedSnapshot(input.runId, `it does not restore into stage ${input.stage.id}: ${problem}`);
  let actor: StageActor;
  try {
    actor = createActor(stageMachineFor(host), {
      input,
      snapshot: stageAsCompiled(snapshot) as Snapshot<unknown>,
    });
  } catch (error) {
    throw corrupt(error instanceof Error ? error.message : String(error));
  }
  const problem = restoreProblem(actor);
  if (problem !== undefined) throw corrupt(problem);
  return actor;
}

/** Runs one stage execution to its end and returns its StageResult. */
export async function runStage(host: Host, input: StageInput): Promise<StageResult> {
  const actor = createStageActor(host, input);
  actor.start();
  return toPromise(actor);
}
