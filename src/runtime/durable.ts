import { type Actor, type AnyStateMachine, createActor } from "xstate";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError, toStagechartError } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import { watchControlQueue } from "./control-watch.js";
import type { Host } from "./host.js";
import { type Launch, launch, type RunHandle, type RunResult } from "./launch.js";
import { type StepStore, stopOnStoreFailure } from "./persistence.js";
import { refuseControl } from "./run-checks.js";
import { compileRunMachine } from "./run-machine.js";
import { StepRecorder } from "./step-recorder.js";
import type { RunWait } from "./suspension.js";

export interface DurableLaunch {
  store: StepStore;
  /** Holds the run's lease already. */
  owner: string;
  leaseTtlMs: number;
  definitionHash: string;
}

/** Refusals of what a resume asked for, which the run's audit log keeps; other errors it does not. */
const AUDITED_REFUSALS = new Set([
  "Session/DefinitionDrift",
  "Session/NoPendingGrant",
  "Session/NoPendingInput",
  "Session/InputAmbiguous",
  "Validation/InputInvalid",
  "Session/IllegalTransition",
  "Validation/OverrideReasonMissing",
]);

/**
 * A run whose every step is committed to the store, by the owner of the run's lease, which it
 * keeps renewed while the run lives and gives up when it ends. A launch the run refuses (an
 * answer or a control event it cannot take) is audited as `RequestRefused`, and nothing else
 * changes.
 */
export function launchDurable(
  pipeline: PipelineDefinition,
  host: Host,
  { store, owner, leaseTtlMs, definitionHash }: DurableLaunch,
  launchOptions: Launch,
): Result<RunHandle> {
  const { runId } = launchOptions;
  const recorder = new StepRecorder(store, runId, definitionHash);
  // Once the lease is lost or the store fails, this process must not write for the run again:
  // it stops, and the run is left to whoever holds it now (or to a later resume).
  let lost: StagechartError | undefined;
  let stop = () => {};
  const giveUp = (error: unknown) => {
    lost ??= toStagechartError(error, "Session/StoreUnavailable");
    stop();
  };
  const records = stopOnStoreFailure(recorder, giveUp);
  const durableHost: Host = {
    ...host,
    audit: recorder,
    journal: records,
    transcripts: records,
    memory: store,
  };
  // A store whose writes finish later (an owned run) reports a failed write or renewal here.
  const watchWrites = () => store.durable?.().catch(giveUp);
  const renewal = setInterval(() => {
    const renewed = store.renewLease(runId, owner, leaseTtlMs);
    if (!renewed.ok) giveUp(renewed.error);
    watchWrites();
  }, leaseTtlMs / 3);
  renewal.unref();
  // A stopped actor's snapshot says "stopped" and would not run again: keep the last live one.
  const commit = (actor: Actor<AnyStateMachine>) => {
    if (lost) return;
    try {
      recorder.commit(
        actor.getSnapshot().status === "stopped" ? undefined : actor.getPersistedSnapshot(),
      );
      watchWrites();
    } catch (error) {
      giveUp(error);
    }
  };
  // A resumed run's budget counts what it spent before this process: its stored events.
  const spentBefore = () => (launchOptions.snapshot === undefined ? [] : store.auditOf(runId));
  const launched = launch(
    pipeline,
    durableHost,
    { spentBefore, startedOn: host, transcripts: recorder, ...launchOptions },
    commit,
  );
  if (!launched.ok) {
    clearInterval(renewal);
    return err(refuseLaunch(store, owner, launchOptions, launched.error));
  }
  const handle = launched.value;
  // Defined until the run settles; kept here for the last commit, after the handle let it go.
  const actor = handle.actor as Actor<AnyStateMachine>;
  stop = () => actor.stop();
  const controls = watchControlQueue(store, runId, actor, {
    check: (event) => refuseControl(pipeline, actor.getSnapshot().context, event),
    recorder,
    commit: () => commit(actor),
    giveUp,
  });
  const result = handle.result.then((outcome): RunResult => {
    clearInterval(renewal);
    clearInterval(controls);
    commit(actor);
    if (!lost) {
      try {
        const wakeAt =
          outcome.status === "suspended" ? earliestDeadline(outcome.waiting) : undefined;
        const patch = {
          status: outcome.status,
          ...(outcome.error && { error: outcome.error }),
          ...(outcome.output !== undefined && { output: outcome.output }),
          ...(wakeAt !== undefined && { wakeAt }),
        };
        store.updateRun(runId, patch, owner);
      } catch (error) {
        lost = toStagechartError(error, "Session/StoreUnavailable");
      }
    }
    if (!lost) return outcome;
    // Not this process's any more, or not storable: the run stays as stored, to be resumed.
    try {
      store.releaseLease(runId, owner);
    } catch {
      // A store that cannot even release it: the lease expires, or its owner is seen gone.
    }
    return { ...outcome, status: "suspended", error: lost.toModelView() };
  });
  return ok(withResult(handle, result));
}

/** The first moment a wait of the run times out (ISO), if any of them has a deadline. */
function earliestDeadline(waits: readonly RunWait[] | undefined): string | undefined {
  const deadlines = (waits ?? []).flatMap((wait) =>
    "deadline" in wait && wait.deadline !== undefined ? [wait.deadline] : [],
  );
  return deadlines.length === 0
    ? undefined
    : new Date(Math.min(...deadlines.map((at) => Date.parse(at)))).toISOString();
}

/** `handle` with another result; built outside `launchDurable`, whose closures hold the actor. */
export function withResult(handle: RunHandle, result: Promise<RunResult>): RunHandle {
  return {
    runId: handle.runId,
    get actor() {
      return handle.actor;
    },
    result,
    events: handle.events,
    transcript: handle.transcript,
    send: handle.send,
    stop: handle.stop,
  };
}

/**
 * Gives up the lease of a launch that did not happen, auditing first why when it was a refusal
 * of what was asked (a damaged store, say, is not written to). The error to report: the
 * refusal, or the store's when it could not be audited.
 */
export function refuseLaunch(
  store: StepStore,
  owner: string,
  { runId, answers, inputs, control }: Pick<Launch, "runId" | "answers" | "inputs" | "control">,
  error: StagechartError,
): StagechartError {
  try {
    // A run whose log has not begun keeps it empty, so that it can still begin from the start.
    if (AUDITED_REFUSALS.has(error.code) && store.lastSeq(runId) > 0)
      store.commitStep(runId, {
        events: [
          {
            type: "RequestRefused",
            runId,
            payload: {
              ...(control && { control }),
              ...(answers?.length && {
                answers: answers.map(({ proposalId, decision }) => ({ proposalId, decision })),
              }),
              ...(inputs?.length && { inputs }),
              error: error.toModelView(),
            },
          },
        ],
      });
    store.releaseLease(runId, owner);
    return error;
  } catch (failure) {
    return toStagechartError(failure, "Session/StoreUnavailable");
  }
}

/**
 * Cancels a run that never began (its row is all there is) without running anything of it: no
 * stage starts, no model is asked. Its log is one `RunCancelled` (`neverBegan: true`), its
 * status `cancelled`. The handle's actor is the run's, never started.
 */
export function cancelNeverBegun(
  pipeline: PipelineDefinition,
  host: Host,
  { store, owner }: DurableLaunch,
  { runId, ctx }: Pick<Launch, "runId" | "ctx">,
  reason: string | undefined,
): Result<RunHandle> {
  let events: AuditEvent[];
  try {
    const payload = { status: "cancelled", neverBegan: true, ...(reason && { reason }) };
    events = store.commitStep(runId, { events: [{ type: "RunCancelled", runId, payload }] });
    store.updateRun(runId, { status: "cancelled" });
    store.releaseLease(runId, owner);
  } catch (error) {
    return err(toStagechartError(error, "Session/StoreUnavailable"));
  }
  const result: RunResult = { runId, status: "cancelled", results: {} };
  return ok({
    runId,
    actor: createActor(compileRunMachine(pipeline, host), { input: { runId, ctx } }),
    result: Promise.resolve(result),
    events: async function* () {
      yield* events;
    },
    transcript: () => [],
    send: () => err(runEnded(runId)),
    stop: () => {},
  });
}

const runEnded = (runId: string) =>
  new StagechartError("Session/RunFinished", `run ${runId} already ended (cancelled)`, { runId });
