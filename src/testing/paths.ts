import { generateSync } from "json-schema-faker";
import { getShortestPaths, getSimplePaths, type StatePath } from "xstate/graph";
import { stageOfSibling } from "../compiler/pipeline-parallel.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { StagechartError } from "../errors.js";
import { type ControlEventName, stageDone } from "./events.js";
import { refuseUnmodelledMaps } from "./map-lists.js";
import { activeStages, isEnd, modelMachine, type PathEnd, traceModel } from "./model.js";
import { resultFor, type StageOutcome } from "./outcomes.js";
import { transitionPaths, type Untaken } from "./transition-paths.js";
import { type ModelSnapshot, type PathEvent, traversalOf } from "./traversal.js";

export const PATH_STRATEGIES = ["shortest", "simple"] as const;
export type PathStrategy = (typeof PATH_STRATEGIES)[number];

/**
 * What the paths cover: `states`, a path to each distinct state that ends the run (by
 * `strategy`); `transitions`, as few paths as take every transition of the graph, each one's
 * way found by construction (see `transitionPaths`); `boundaries`, those and each `visits`
 * threshold of a rule on either side (walking as many visits as that needs).
 */
export const PATH_COVERS = ["states", "transitions", "boundaries"] as const;
export type PathCover = (typeof PATH_COVERS)[number];

export interface PathStep {
  stage: string;
  /** A stage outcome (`ok`, `cap-hit`…) or a control event (`OVERRIDE execute`, `REDO plan`, `CANCEL`). */
  outcome: string;
}

export interface PipelinePath {
  id: string;
  steps: PathStep[];
  end: PathEnd;
}

export interface PathList {
  pipelineId: string;
  strategy: PathStrategy;
  /** `transitions` or `boundaries` when the paths were chosen to take every transition. */
  cover?: PathCover;
  /** The ctx the paths were generated with (and a test runs them with). */
  ctx: Record<string, unknown>;
  paths: PipelinePath[];
  /** With `cover: "transitions"`: each transition no path takes, with the checked reason. */
  untaken?: Untaken[];
}

export interface PathOptions {
  strategy?: PathStrategy;
  /** `states` (the default), or `transitions` or `boundaries`, which walk the shortest ways (`strategy` aside). */
  cover?: PathCover;
  /** No path enters a stage more often than this (default 3). */
  maxVisits?: number;
  /** Control events to send from every stage too (bounded by `maxVisits`, since each enters a stage). */
  events?: readonly ControlEventName[];
  /** The run's ctx; by default one generated from the pipeline's `context` schema. */
  ctx?: Record<string, unknown>;
  /**
   * The most states the `states` walk visits before it refuses the paths as too many
   * (`Validation/PathLimitExceeded`); default 100,000.
   */
  maxStates?: number;
}

/**
 * The paths through a pipeline's statechart from its entry to an end, found by `xstate/graph`
 * on the compiled machine: every stage outcome the rules can tell apart, every sibling order a
 * group's policy can tell apart, plus one path per way a stage can suspend the run. With `cover:
 * "transitions"`, as few paths as take every transition (and each way to suspend), and the
 * transitions none takes with why.
 */
export function pipelinePaths(pipeline: PipelineDefinition, options: PathOptions = {}): PathList {
  refuseUnmodelledMaps(pipeline);
  const ctx = options.ctx ?? sampleContext(pipeline);
  const bounds = {
    ctx,
    maxVisits: options.maxVisits ?? 3,
    ...(options.events && { events: options.events }),
  };
  const traversal = traversalOf(pipeline, bounds);
  const numbered = (paths: Omit<PipelinePath, "id">[]) =>
    paths.map((path, index) => ({ id: `path-${index + 1}`, ...path }));
  if (options.cover === "transitions" || options.cover === "boundaries") {
    const cover = transitionPaths(pipeline, {
      ...bounds,
      boundaries: options.cover === "boundaries",
    });
    const { states } = cover.exploration;
    const wayTo = (stage: string) => {
      const at = states.find((state) => runnerOf(state.snapshot, stage) !== undefined);
      const events: PathEvent[] = [];
      for (let via = at?.via; via; via = states[via.from]?.via) events.unshift(via.event);
      return at && { state: at.snapshot, events, runner: runnerOf(at.snapshot, stage) as string };
    };
    return {
      pipelineId: pipeline.id,
      strategy: "shortest",
      cover: options.cover,
      ctx,
      paths: numbered([
        ...cover.paths,
        ...suspendedPaths(pipeline, ctx, wayTo, traversal.outcomes),
      ]),
      untaken: cover.untaken,
    };
  }
  const strategy = options.strategy ?? "shortest";
  const limit = options.maxStates ?? STATE_LIMIT;
  const walk = { ...traversal, events: traversal.events as never, limit };
  const machine = modelMachine(pipeline);
  const reachable = withinLimit(
    limit,
    () => getShortestPaths(machine, walk) as StatePath<ModelSnapshot, PathEvent>[],
  );
  const ending =
    strategy === "shortest"
      ? reachable
      : withinLimit(limit, () => getSimplePaths(machine, walk) as typeof reachable);
  const ended = ending
    .filter((path) => isEnd(path.state.value))
    .map((path) => ({
      steps: stepsOf(path.steps.map(({ event }) => event)),
      end: path.state.value as PathEnd,
    }));
  const sorted = [...reachable].sort((a, b) => a.steps.length - b.steps.length);
  const wayTo = (stage: string) => {
    const way = sorted.find((path) => runnerOf(path.state, stage) !== undefined);
    return (
      way && {
        state: way.state,
        events: way.steps.map(({ event }) => event),
        runner: runnerOf(way.state, stage) as string,
      }
    );
  };
  return {
    pipelineId: pipeline.id,
    strategy,
    ctx,
    paths: numbered([...ended, ...suspendedPaths(pipeline, ctx, wayTo, traversal.outcomes)]),
  };
}

function stepsOf(events: readonly PathEvent[]): PathStep[] {
  return events.flatMap((event) =>
    "outcome" in event ? [{ stage: event.from, outcome: event.outcome }] : [],
  );
}

/**
 * The shortest way the walk found to a state where `stage` runs, that state, and what runs it
 * there: the stage, or a map group's item (`review-file[0]`).
 */
type WayTo = (
  stage: string,
) => { state: ModelSnapshot; events: PathEvent[]; runner: string } | undefined;

/** What runs `stage` in a snapshot: itself, or the first running item of a map group over it. */
const runnerOf = (snapshot: ModelSnapshot, stage: string): string | undefined =>
  activeStages(snapshot).find((active) => stageOfSibling(active) === stage);

/**
 * For each outcome that suspends the run, the shortest way to a state where its stage runs, the
 * other running siblings settling `ok` first (a suspended run is one where nothing else can
 * move), and the suspension.
 */
function suspendedPaths(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  wayTo: WayTo,
  outcomes: Map<string, StageOutcome[]>,
): Omit<PipelinePath, "id">[] {
  return [...outcomes.values()].flat().flatMap((outcome) => {
    if (!outcome.suspends) return [];
    const way = wayTo(outcome.stage);
    if (!way) return [];
    const others = activeStages(way.state, pipeline).flatMap((stage) => {
      const ok = outcomes.get(stageOfSibling(stage))?.find((o) => o.drive.kind === "complete");
      return stage === way.runner || !ok ? [] : [{ stage, outcome: ok }];
    });
    const before = [
      ...way.events.flatMap((event) => ("outcome" in event ? [{ event, stage: event.from }] : [])),
      ...others.map(({ stage, outcome: ok }) => ({
        event: stageDone(stage, resultFor(ok)),
        stage,
      })),
    ];
    const trace = traceModel(pipeline, ctx, [
      ...before,
      { event: { type: "stagechart.probe" }, stage: way.runner },
    ]);
    if (trace.refused) return [];
    return [
      {
        steps: [
          ...stepsOf(way.events),
          ...others.map(({ stage, outcome: ok }) => ({ stage, outcome: ok.name })),
          { stage: way.runner, outcome: outcome.name },
        ],
        end: "suspended" as const,
      },
    ];
  });
}

/**
 * A ctx the pipeline's `context` schema accepts, sampled (seeded) with json-schema-faker, with
 * every declared field, since stage templates may read any of them.
 */
/** What xstate/graph's walk may visit before the paths are refused as too many. */
const STATE_LIMIT = 100_000;

/**
 * `walk()`, its paths, or `Validation/PathLimitExceeded` when xstate/graph gives up past the
 * limit (it throws a plain Error, which would reach the user as an internal error).
 */
function withinLimit<T>(limit: number, walk: () => T): T {
  try {
    return walk();
  } catch (error) {
    if (error instanceof Error && error.message === "Traversal limit exceeded")
      throw new StagechartError(
        "Validation/PathLimitExceeded",
        `the pipeline's model has more than ${limit} states within the visits and control events allowed: lower --max-visits or name fewer --events`,
        { limit },
      );
    throw error;
  }
}

export function sampleContext(pipeline: PipelineDefinition): Record<string, unknown> {
  const value = generateSync(pipeline.context as never, { seed: 1, alwaysFakeOptionals: true });
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
