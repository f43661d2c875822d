import { StagechartError } from "../errors.js";
import { openExistingAnyStore } from "./any-store.js";
import { refuse } from "./drive.js";
import { type CliIo, EXIT } from "./io.js";

/**
 * `cancel` of a run no worker took yet, on either store: it is cancelled in place, nothing of it
 * runs. Any other run goes to `otherwise` (the run's live owner is asked, or the stored run is
 * resumed to cancel it).
 */
export async function cancelQueuedOr(
  runId: string,
  reason: string,
  flags: { store?: string; json?: boolean },
  io: CliIo,
  otherwise: () => Promise<number>,
): Promise<number> {
  const store = await openExistingAnyStore(flags.store);
  if (!store) return otherwise();
  if (!store.ok) return refuse(io, flags.json, store.error, runId);
  try {
    const cancelled = await store.value.cancelQueuedRun(runId, reason);
    if (cancelled.ok) {
      io.stdout(
        flags.json
          ? `${JSON.stringify({ runId, status: "cancelled" })}\n`
          : `run ${runId} cancelled before any worker took it\n`,
      );
      return EXIT.done;
    }
  } catch (error) {
    if (!(error instanceof StagechartError)) throw error;
    return refuse(io, flags.json, error, runId);
  } finally {
    await store.value.close();
  }
  return otherwise();
}
