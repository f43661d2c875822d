import { InvalidArgumentError } from "commander";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { createRunControl } from "../runtime/run-control.js";
import type { RunStore } from "../runtime/store-port.js";
import { refuse } from "./drive.js";
import { type CliIo, EXIT } from "./io.js";

export interface ControlFlags {
  json?: boolean;
  by?: string;
  /** Seconds to wait for the run's owner. */
  timeout?: number;
}

/**
 * `cancel`, `override` or `redo` of a run another live process owns: asked of that owner through
 * the store, waiting for its answer. The exit code, or undefined when the run stopped being live
 * before its owner took the request (it is withdrawn): the caller then applies the event to the
 * stored run itself.
 */
export async function controlLiveRun(
  store: RunStore,
  runId: string,
  event: PipelineEvent,
  flags: ControlFlags,
  io: CliIo,
): Promise<number | undefined> {
  if (!flags.json)
    io.stderr(`run ${runId} is live in another process: asking it to ${event.type}\n`);
  // The one control path, with nothing to resume a run with here: a run that stopped being live
  // is refused, and the command resumes it itself, with its terminal and progress.
  const control = createRunControl({
    store,
    ...(flags.by && { by: flags.by }),
    ...(flags.timeout && { timeoutMs: flags.timeout * 1000 }),
  });
  const outcome = await control.send(runId, event);
  if (outcome.ok && outcome.value.outcome === "applied") {
    const { requestId } = outcome.value;
    const summary = { runId, control: event.type, outcome: "applied", requestId };
    io.stdout(
      flags.json
        ? `${JSON.stringify(summary)}\n`
        : `run ${runId}: ${event.type} applied by the process that runs it\n`,
    );
    return EXIT.done;
  }
  if (outcome.ok) return undefined;
  const { error } = outcome;
  if (error.code === "Session/RunNotLive" || error.context.reason === "not-live") return undefined;
  return refuse(io, flags.json, error, runId, "running");
}

/** `--timeout`'s value: seconds, above 0. */
export function positiveSeconds(text: string): number {
  const seconds = Number(text);
  if (!(seconds > 0)) throw new InvalidArgumentError("a number of seconds above 0");
  return seconds;
}
