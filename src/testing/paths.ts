import { generateSync } from "json-schema-faker";
import type { Snapshot } from "xstate";
import { getShortestPaths, getSimplePaths, type StatePath } from "xstate/graph";
import type { PipelineContext } from "../compiler/pipeline-context.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { type ControlEventName, controlEventsFrom, stageDone } from "./events.js";
import { activeStages, isEnd, modelMachine, type PathEnd, traceModel } from "./model.js";
import {
  missesUpstream,
  refusesInputs,
  resultFor,
  type StageOutcome,
  stageOutcomes,
} from "./outcomes.js";

export const PATH_STRATEGIES = ["shortest", "simple"] as const;
export type PathStrategy = (typeof PATH_STRATEGIES)[number];

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
  /** The ctx the paths were generated with (and a test runs them with). */
  ctx: Record<string, unknown>;
  paths: PipelinePath[];
}

export interface PathOptions {
  strategy?: PathStrategy;
  /** No path enters a stage more often than this (default 3). */
  maxVisits?: number;
  /** Control events to send from every stage too (bounded by `maxVisits`, since each enters a stage). */
  events?: readonly ControlEventName[];
  /** The run's ctx; by default one generated from the pipeline's `context` schema. */
  ctx?: Record<string, unknown>;
}

/** A traversal event, with the step it stands for: `from` the stage it comes from (REDO has its own `stage`). */
type PathEvent = { type: string; outcome: string; from: string };
type ModelSnapshot = Snapshot<unknown> & { value: unknown; context: PipelineContext };

/**
 * The paths through a pipeline's statechart from its entry to an end, found by `xstate/graph`
 * on the compiled machine: every stage outcome the rules can tell apart, every sibling order a
 * group's policy can tell apart, plus one path per way a stage can suspend the run.
 */
export function pipelinePaths(pipeline: PipelineDefinition, options: PathOptions = {}): PathList {
  const strategy = options.strategy ?? "shortest";
  const maxVisits = options.maxVisits ?? 3;
  const ctx = options.ctx ?? sampleContext(pipeline);
  const outcomes = new Map(
    Object.keys(pipeline.stages).map((id) => [id, stageOutcomes(pipeline, id).outcomes]),
  );
  const events = (snapshot: ModelSnapshot): PathEvent[] => {
    if (Object.values(snapshot.context.visits).some((n) => n > maxVisits)) return [];
    return activeStages(snapshot).flatMap((stage) => [
      ...possibleOutcomes(pipeline, snapshot, stage, outcomes.get(stage) ?? []).map((o) => ({
        ...stageDone(stage, resultFor(o)),
        outcome: o.name,
        from: stage,
      })),
      // A stage that fails before its model is called gives a control event no time to arrive.
      ...(refusedHere(pipeline, snapshot, stage)
        ? []
        : controlEventsFrom(pipeline, stage, options.events ?? [])
      ).map((e) => ({
        ...e,
        from: stage,
        outcome:
          e.type === "OVERRIDE"
            ? `OVERRIDE ${e.to}`
            : e.type === "REDO"
              ? `REDO ${e.stage}`
              : "CANCEL",
      })),
    ]);
  };
  const traversal = {
    input: { runId: "model", ctx },
    events: events as never,
    // The verdicts too: a join's inputsSchema may refuse a failed sibling's result.
    serializeState: (snapshot: ModelSnapshot) =>
      JSON.stringify([
        snapshot.value,
        snapshot.context.visits,
        snapshot.context.groups,
        snapshot.context.upstream.map((r) => r.verdict),
        settledSiblings(pipeline, snapshot),
      ]),
    limit: 100_000,
  };
  const machine = modelMachine(pipeline);
  const reachable = getShortestPaths(machine, traversal) as StatePath<ModelSnapshot, PathEvent>[];
  const ending =
    strategy === "shortest" ? reachable : (getSimplePaths(machine, traversal) as typeof reachable);
  const ended = ending
    .filter((path) => isEnd(path.state.value))
    .map((path) => ({ steps: stepsOf(path), end: path.state.value as PathEnd }));
  const paths = [...ended, ...suspendedPaths(pipeline, ctx, reachable, outcomes)].map(
    (path, index) => ({
      id: `path-${index + 1}`,
      ...path,
    }),
  );
  return { pipelineId: pipeline.id, strategy, ctx, paths };
}

/**
 * A stage's outcomes where it runs now: only `inputs-refused` when its inputsSchema refuses what
 * it receives or its prompt reads an upstream result it does not receive.
 */
function possibleOutcomes(
  pipeline: PipelineDefinition,
  snapshot: ModelSnapshot,
  stage: string,
  outcomes: readonly StageOutcome[],
): StageOutcome[] {
  const refused = refusedHere(pipeline, snapshot, stage);
  return outcomes.filter((o) => !o.suspends && (o.drive.kind === "inputs-refused") === refused);
}

/**
 * What the group running now can tell apart of its settled siblings, by sibling: whether each
 * counts towards `any`/`quorum`, whether the join's inputsSchema refuses it, or its verdict when
 * the join is code (which may read anything). Without it, two sibling orders that join
 * differently would be one state.
 */
function settledSiblings(
  pipeline: PipelineDefinition,
  snapshot: ModelSnapshot,
): Record<string, string> {
  const group = groupOf(snapshot);
  if (group === undefined) return {};
  const transition = pipeline.next[group];
  if (transition?.kind !== "parallel") return {};
  const join = pipeline.stages[transition.join];
  const counts = transition.policy.kind === "any" || transition.policy.kind === "quorum";
  const states = snapshot.context.groups[group] ?? {};
  return Object.fromEntries(
    transition.siblings.flatMap((sibling) => {
      const result = snapshot.context.results[sibling];
      if (states[sibling] !== "settled" || !result) return [];
      if (join && join.kind !== "llm") return [[sibling, result.verdict]];
      const seen = [
        counts ? (result.verdict === "ok" ? "counts" : "does-not-count") : "",
        join && refusesInputs(pipeline, join.id, [result]) ? "refused" : "",
      ];
      return [[sibling, seen.filter(Boolean).join(",")]];
    }),
  );
}

/** The stage whose parallel group the run is in, if it is in one. */
function groupOf(snapshot: ModelSnapshot): string | undefined {
  if (typeof snapshot.value !== "string") return undefined;
  const group = stageOfState(snapshot.value);
  return group === snapshot.value ? undefined : group;
}

/** Whether a stage entered now refuses what it receives (a sibling receives nothing). */
function refusedHere(
  pipeline: PipelineDefinition,
  snapshot: ModelSnapshot,
  stage: string,
): boolean {
  if (groupOf(snapshot) !== undefined) return false;
  const { upstream } = snapshot.context;
  return refusesInputs(pipeline, stage, upstream) || missesUpstream(pipeline, stage, upstream);
}

function stepsOf(path: StatePath<ModelSnapshot, PathEvent>): PathStep[] {
  return path.steps.flatMap(({ event }) =>
    "outcome" in event ? [{ stage: event.from, outcome: event.outcome }] : [],
  );
}

/**
 * For each outcome that suspends the run, the shortest way to a state where its stage runs, the
 * other running siblings settling `ok` first (a suspended run is one where nothing else can
 * move), and the suspension.
 */
function suspendedPaths(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  reachable: StatePath<ModelSnapshot, PathEvent>[],
  outcomes: Map<string, StageOutcome[]>,
): Omit<PipelinePath, "id">[] {
  const sorted = [...reachable].sort((a, b) => a.steps.length - b.steps.length);
  return [...outcomes.values()].flat().flatMap((outcome) => {
    if (!outcome.suspends) return [];
    const way = sorted.find((path) => activeStages(path.state).includes(outcome.stage));
    if (!way) return [];
    const others = activeStages(way.state).flatMap((stage) => {
      const ok = outcomes.get(stage)?.find((o) => o.drive.kind === "complete");
      return stage === outcome.stage || !ok ? [] : [{ stage, outcome: ok }];
    });
    const before = [
      ...way.steps.flatMap(({ event }) =>
        "outcome" in event ? [{ event, stage: event.from }] : [],
      ),
      ...others.map(({ stage, outcome: ok }) => ({
        event: stageDone(stage, resultFor(ok)),
        stage,
      })),
    ];
    const trace = traceModel(pipeline, ctx, [
      ...before,
      { event: { type: "stagechart.probe" }, stage: outcome.stage },
    ]);
    if (trace.refused) return [];
    return [
      {
        steps: [
          ...stepsOf(way),
          ...others.map(({ stage, outcome: ok }) => ({ stage, outcome: ok.name })),
          { stage: outcome.stage, outcome: outcome.name },
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
export function sampleContext(pipeline: PipelineDefinition): Record<string, unknown> {
  const value = generateSync(pipeline.context as never, { seed: 1, alwaysFakeOptionals: true });
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}
