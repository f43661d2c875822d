import { err, ok, type Result, StagechartError } from "../errors.js";
import { forkRun } from "../runtime/fork-run.js";
import type { RunHandle } from "../runtime/launch.js";
import type { PreparedRun } from "../runtime/run-control.js";
import type { RunRecord } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import type * as z from "../zod.js";
import type { forkBody } from "./api-schemas.js";

/** What the page asks of a fork: `stagechart fork <runId> --at <at> --set k=v… [--run-id] [--force]`. */
export type PageFork = z.infer<typeof forkBody>;

/** Forks a stored run and starts the fork in this process; its id once it has started. */
export type Forker = (sourceRunId: string, fork: PageFork) => Promise<Result<{ runId: string }>>;

/**
 * `POST /api/v1/runs/<runId>/fork` `{at, set?, runId?, force?}`: a new run from step `at` of the
 * run, with `set` merged into its ctx, started here as `stagechart fork` starts it; the reply
 * names it for the page to open. A server that does not run runs (`resumeRuns` off: a run's own
 * `--inspect` server) has no forker, and refuses.
 */
export async function forkFromPage(
  forker: Forker | undefined,
  runId: string,
  fork: PageFork,
): Promise<Result<unknown>> {
  if (!forker)
    return err(
      new StagechartError(
        "Session/ForkNotServed",
        `this inspect server does not start runs, so it cannot fork ${runId}: open the run under \`stagechart inspect\`, or run \`stagechart fork ${runId} --at ${fork.at}\``,
        { runId },
      ),
    );
  const forked = await forker(runId, fork);
  if (!forked.ok) return forked;
  return ok({
    runId: forked.value.runId,
    from: { runId, step: fork.at },
    outcome: "started",
  });
}

/**
 * The forker of a server that runs runs: the source run prepared as the server resumes a run
 * (its pipeline and host from the settings stored with it), forked and started by `forkRun`;
 * `started` is told of each fork's handle, whose prepared resources are closed when it ends.
 */
export function forkerOver(
  store: RunStore,
  prepare: (run: RunRecord) => Promise<Result<PreparedRun>>,
  started: (handle: RunHandle) => void,
): Forker {
  return async (sourceRunId, { at, set, runId, force }) => {
    const source = await store.getRun(sourceRunId);
    if (!source.ok) return source;
    const prepared = await prepare(source.value);
    if (!prepared.ok) return prepared;
    const { pipeline, host, inspect, close } = prepared.value;
    const forked = await forkRun(pipeline, sourceRunId, {
      store,
      host,
      at,
      source: source.value,
      ...(set && { set }),
      ...(runId !== undefined && { runId }),
      ...(force && { force }),
      ...(inspect && { inspect }),
    });
    if (!forked.ok) {
      await close?.();
      return forked;
    }
    started(forked.value);
    void forked.value.result.finally(() => close?.()).catch(() => undefined);
    return ok({ runId: forked.value.runId });
  };
}
