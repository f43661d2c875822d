import type { StagechartError } from "../errors.js";
import type { RunStore } from "../runtime/store-port.js";
import type { CliIo } from "./io.js";

/**
 * What the store lost of its runs, of `runId` only when given (`Session/StoreDamaged`: a WAL
 * deleted or damaged after a crash took steps the runs had committed).
 */
export async function lostStepsOf(store: RunStore, runId?: string): Promise<StagechartError[]> {
  const lost = (await store.lostSteps?.()) ?? [];
  return runId === undefined ? lost : lost.filter((error) => error.context.runId === runId);
}

/** Each loss on stderr: what the command shows is what is left. */
export function warnLost(io: CliIo, lost: readonly StagechartError[]): void {
  for (const error of lost) io.stderr(`warning: ${error.code}: ${error.message}\n`);
}
