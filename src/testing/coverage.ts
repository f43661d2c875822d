import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { graphTransitions } from "./coverable.js";
import type { ControlEventName } from "./events.js";
import { sampleContext } from "./paths.js";
import { whyUntaken } from "./transition-paths.js";

export interface Uncovered {
  transition: string;
  reason: string;
}

export interface Coverage {
  transitions: { covered: number; total: number; uncovered: Uncovered[] };
}

/** How the reasons for transitions no path takes are found: given, or checked on the model walked so. */
export interface CoverageOptions {
  /** Reasons already checked (a `cover: "transitions"` path list's `untaken`). */
  untaken?: readonly Uncovered[];
  /** The walk to check the others on: the paths' ctx, bound and control events. */
  ctx?: Record<string, unknown>;
  maxVisits?: number;
  events?: readonly ControlEventName[];
}

/**
 * Which graph transitions the real runs took; each one they did not, with why: the path that
 * takes it failed, or no path takes it — for a reason checked on the model (`whyUntaken`):
 * its guard holds only for an outcome the stage's schema rules out, or it lies beyond
 * `--max-visits` (the bound under which a path takes it named).
 */
export function transitionCoverage(
  pipeline: PipelineDefinition,
  runs: readonly { covered: readonly string[]; modelled: readonly string[] }[],
  options: CoverageOptions = {},
): Coverage {
  const all = graphTransitions(pipeline);
  const covered = new Set(runs.flatMap((run) => run.covered));
  const modelled = new Set(runs.flatMap((run) => run.modelled));
  const known = new Map((options.untaken ?? []).map((u) => [u.transition, u.reason]));
  const missed = all.filter((transition) => !covered.has(transition));
  const unexplained = missed.filter((t) => !modelled.has(t) && !known.has(t));
  const checked =
    unexplained.length === 0
      ? []
      : whyUntaken(pipeline, unexplained, {
          ctx: options.ctx ?? sampleContext(pipeline),
          maxVisits: options.maxVisits ?? 3,
          ...(options.events && { events: options.events }),
        });
  for (const { transition, reason } of checked) known.set(transition, reason);
  const uncovered = missed.map((transition) => ({
    transition,
    reason: modelled.has(transition) ? "its path failed" : (known.get(transition) as string),
  }));
  return { transitions: { covered: all.length - uncovered.length, total: all.length, uncovered } };
}
