import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { behaviourDifference, reachableDifference } from "./equivalence.js";
import { type MutationKind, mutantsOf } from "./mutants.js";
import { type PathList, type PathOptions, type PipelinePath, pipelinePaths } from "./paths.js";
import { modelTrace, outcomeFinder, runPath } from "./run-path.js";
import type { Fixtures } from "./stand-ins.js";
import { boundaryBounds, walkOf } from "./transition-paths.js";

export interface MutationOptions extends PathOptions {
  /** How many mutants to make. */
  mutants: number;
  /** Seeds the choice of mutants (default 1): the same seed, the same mutants. */
  seed?: number;
  /** A saved `paths --json` list to replay; by default the paths that cover the transitions. */
  paths?: PathList;
  fixtures?: Fixtures;
  /** Per path run (default 60 s). */
  timeoutMs?: number;
  /** Told of each mutant as soon as it is judged, with how many of how many are. */
  onMutantDone?: (result: MutantResult, progress: { done: number; total: number }) => void;
}

export interface MutantResult {
  id: string;
  kind: MutationKind;
  stage: string;
  description: string;
  /**
   * `caught`: a path that passes on the pipeline fails on the mutant; `survived`: every one
   * passes though the mutant behaves otherwise; `equivalent`: the mutant behaves as the pipeline
   * does, so no path could tell them apart (it counts neither way).
   */
  status: "caught" | "survived" | "equivalent";
  caughtBy?: { path: string; reason: string };
  /** What the mutant does otherwise (none for an equivalent one). */
  difference?: string;
  /** Why an equivalent mutant behaves as the pipeline does. */
  equivalence?: string;
}

export interface MutationReport {
  seed: number;
  /** The paths replayed against each mutant (those that pass on the pipeline), and those that do not pass. */
  paths: { replayed: string[]; failing: { id: string; reason: string }[] };
  mutants: MutantResult[];
  caught: number;
  survived: number;
  equivalent: number;
  /** The share of the mutants that behave otherwise which a path caught; null when none does. */
  score: number | null;
}

/**
 * The mutation score of a pipeline's paths: `mutants` seeded mutations of its rules (a target
 * swapped, a rule dropped, a condition negated, a threshold or `visits` bound moved, a group's
 * policy or join changed), the paths replayed against each as `test --paths` replays them on the
 * real engine, and the share of the mutants that behave otherwise caught by a path. A mutant that
 * behaves as the pipeline does (`behaviourDifference`) is reported equivalent, not as a survivor.
 */
export async function mutationScore(
  pipeline: PipelineDefinition,
  options: MutationOptions,
): Promise<MutationReport> {
  const seed = options.seed ?? 1;
  const list =
    options.paths ?? pipelinePaths(pipeline, { ...options, cover: options.cover ?? "boundaries" });
  const runOptions = {
    ctx: list.ctx,
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    ...(options.fixtures && { fixtures: options.fixtures }),
  };
  const replayed: PipelinePath[] = [];
  const failing: { id: string; reason: string }[] = [];
  for (const path of list.paths) {
    const run = await runPath(pipeline, path, runOptions);
    if (run.ok) replayed.push(path);
    else failing.push({ id: path.id, reason: run.reason ?? "failed" });
  }
  const mutants = mutantsOf(pipeline, options.mutants, seed);
  // Every count of visits a rule tells apart is walked: where no run goes, a mutant cannot differ.
  const bounds = boundaryBounds(pipeline, {
    ctx: list.ctx,
    maxVisits: options.maxVisits ?? 3,
    ...(options.events && { events: options.events }),
  });
  const { exploration } = walkOf(pipeline, bounds);
  const results: MutantResult[] = [];
  for (const mutant of mutants) {
    const { id, kind, stage, description } = mutant;
    const anywhere = behaviourDifference(pipeline, mutant, list.ctx);
    const difference =
      anywhere === undefined
        ? undefined
        : reachableDifference(pipeline, mutant, exploration, list.ctx);
    let result: MutantResult;
    if (difference === undefined)
      result = {
        id,
        kind,
        stage,
        description,
        status: "equivalent",
        equivalence:
          anywhere === undefined
            ? "it routes every result alike"
            : `it differs only where no run goes within --max-visits ${bounds.maxVisits} (${anywhere})`,
      };
    else {
      const caughtBy = await firstFailing(mutant.pipeline, replayed, runOptions);
      result = {
        id,
        kind,
        stage,
        description,
        status: caughtBy ? "caught" : "survived",
        ...(caughtBy && { caughtBy }),
        difference,
      };
    }
    results.push(result);
    options.onMutantDone?.(result, { done: results.length, total: mutants.length });
  }
  const count = (status: MutantResult["status"]) =>
    results.filter((r) => r.status === status).length;
  const [caught, survived] = [count("caught"), count("survived")];
  return {
    seed,
    paths: { replayed: replayed.map((p) => p.id), failing },
    mutants: results,
    caught,
    survived,
    equivalent: count("equivalent"),
    score: caught + survived === 0 ? null : caught / (caught + survived),
  };
}

/**
 * The first path that fails on the mutant, and why. Its steps are replayed on the mutant's model
 * first: a step it cannot take or an end it does not reach fails the path as `test --paths`
 * would, without a run that would wait for steps the path does not have.
 */
async function firstFailing(
  mutant: PipelineDefinition,
  paths: readonly PipelinePath[],
  options: Parameters<typeof runPath>[2] & { ctx: Record<string, unknown> },
): Promise<{ path: string; reason: string } | undefined> {
  const outcomes = outcomeFinder(mutant);
  for (const path of paths) {
    const trace = modelTrace(mutant, options.ctx, path.steps, outcomes);
    if (trace.refused) return { path: path.id, reason: trace.refused };
    if (trace.end !== path.end)
      return {
        path: path.id,
        reason:
          trace.end === undefined
            ? `the pipeline goes on after the path's last step, which ended it ${path.end}`
            : `the pipeline now ends this path ${trace.end}, not ${path.end}`,
      };
  }
  for (const path of paths) {
    const run = await runPath(mutant, path, options);
    if (!run.ok) return { path: path.id, reason: run.reason ?? "failed" };
  }
  return undefined;
}
