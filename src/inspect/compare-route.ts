import { err, ok, type Result, StagechartError } from "../errors.js";
import type { RunStore } from "../runtime/store-port.js";
import { type ComparedRun, diffRuns, type RunDiff } from "./run-diff.js";

/**
 * `GET /api/v1/compare/<a>/<b>`: two stored runs of one pipeline compared (`diffRuns`): where their
 * paths part, and each stage's durations and tokens with b − a. Runs of two pipelines are refused
 * (`Validation/ComparePipelinesDiffer`), a run not there is `Session/RunNotFound`.
 */
export async function compareStoredRuns(
  store: RunStore,
  a: string,
  b: string,
): Promise<Result<RunDiff>> {
  const runA = await comparedRun(store, a);
  if (!runA.ok) return runA;
  const runB = await comparedRun(store, b);
  if (!runB.ok) return runB;
  const diff = diffRuns(runA.value, runB.value);
  if (diff.ok) return ok(diff.value);
  const { code, message, context } = diff.error;
  return err(new StagechartError(code, message, context));
}

async function comparedRun(store: RunStore, runId: string): Promise<Result<ComparedRun>> {
  const run = await store.getRun(runId);
  if (!run.ok) return run;
  const [events, steps] = [await store.auditOf(runId), await store.stepsOf(runId)];
  return ok({ run: run.value, events, steps });
}
