import type { Actor, AnyStateMachine } from "xstate";
import type { PipelineContext } from "../compiler/pipeline-context.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { lookup, recordOf } from "../compiler/stage-table.js";
import type { TransitionNotice } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { toStagechartError } from "../errors.js";
import type { Host } from "./host.js";

/**
 * Tells a pipeline's `onTransition` hook where its run is, each time that changes: called after
 * every committed step (and once the run ends), it notifies only when the root state moved or its stage was entered again. The
 * hook's calls run one after another, in order; `settled` waits for the last one.
 */
export function transitionNotifier(
  pipeline: PipelineDefinition,
  host: Host,
  runId: string,
): { notify(actor: Actor<AnyStateMachine>): void; settled(): Promise<void> } {
  const hook = pipeline.onTransition;
  let previous: string | undefined;
  let last: string | undefined;
  let chain: Promise<void> = Promise.resolve();
  return {
    notify(actor) {
      if (!hook) return;
      const snapshot = actor.getSnapshot();
      const context = snapshot.context as PipelineContext;
      const state = currentState(snapshot.value, context);
      // A stage entered again (a rule back to itself) is a transition too: its visits moved.
      const at = `${state}#${lookup(context.visits, state) ?? 0}`;
      if (at === last) return;
      last = at;
      const notice: TransitionNotice = {
        runId,
        pipelineId: pipeline.id,
        state,
        ...(previous !== undefined && { previous }),
        ctx: context.ctx,
        visits: recordOf(context.visits),
        results: recordOf(context.results),
        root: host.root,
      };
      previous = state;
      chain = chain.then(async () => {
        try {
          await hook(notice);
        } catch (error) {
          host.audit.emit({
            type: "TransitionHookFailed",
            runId,
            payload: {
              state,
              error: toStagechartError(error, "ExtensionHost/LifecycleFailure").toModelView(),
            },
          });
        }
      });
    },
    settled: () => chain,
  };
}

/** The stage the run is in (the fan-out stage of a running group), or `done`/`failed`/`cancelled`. */
function currentState(value: unknown, context: PipelineContext): string {
  if (typeof value === "string" && ["done", "failed", "cancelled"].includes(value)) return value;
  return stageOfState(context.current ?? String(value));
}
