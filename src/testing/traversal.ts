import type { Snapshot } from "xstate";
import type { PipelineContext } from "../compiler/pipeline-context.js";
import {
  groupSiblingsOf,
  siblingIds,
  siblingState,
  stageOfSibling,
} from "../compiler/pipeline-parallel.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { entriesOf, lookup, type StageTable } from "../compiler/stage-table.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { type ControlEventName, controlEventsFrom, stageDone } from "./events.js";
import { missesUpstream, refusesInputs } from "./inputs-refused.js";
import { activeStages } from "./model.js";
import { resultFor, type StageOutcome, stageOutcomes } from "./outcomes.js";

/** A traversal event, with the step it stands for: `from` the stage it comes from (REDO has its own `stage`). */
export type PathEvent = { type: string; outcome: string; from: string };
export type ModelSnapshot = Snapshot<unknown> & { value: unknown; context: PipelineContext };

/** How the model is walked: its input, the events each state offers, and how states are told apart. */
export interface Traversal {
  input: { runId: string; ctx: Record<string, unknown> };
  events: (snapshot: ModelSnapshot) => PathEvent[];
  serializeState: (snapshot: ModelSnapshot) => string;
  /** Each stage's outcomes, by stage id. */
  outcomes: Map<string, StageOutcome[]>;
}

export interface TraversalOptions {
  ctx: Record<string, unknown>;
  /** No state where a stage was entered more often than this offers an event. */
  maxVisits: number;
  events?: readonly ControlEventName[];
  /** Tell apart states whose groups' tallies differ though their policies do not tell them apart. */
  tallies?: boolean;
}

/**
 * The walk of a pipeline's model that `paths` makes: from each state, every outcome of each
 * running stage that its rules can tell apart (and the control events asked for); states told
 * apart by value, visits, sibling states, the verdicts handed on and what a group can tell apart
 * of its settled siblings.
 */
export function traversalOf(pipeline: PipelineDefinition, options: TraversalOptions): Traversal {
  const outcomes = new Map(
    Object.keys(pipeline.stages).map((id) => [id, stageOutcomes(pipeline, id).outcomes]),
  );
  const events = (snapshot: ModelSnapshot): PathEvent[] => {
    for (const [, n] of entriesOf(snapshot.context.visits)) if (n > options.maxVisits) return [];
    // A map group's item (`review-file[0]`) has its stage's outcomes and control events. Its
    // running items are alike, so the first in list order settles for any of them: which one
    // ends first is no different to the group, and states told apart by count (`groupsKey`)
    // then offer the same steps whichever way they were reached.
    const running = activeStages(snapshot, pipeline);
    const movers = isMap(pipeline, groupOf(snapshot)) ? running.slice(0, 1) : running;
    return movers.flatMap((stage) => [
      ...possibleOutcomes(pipeline, snapshot, stage, outcomes.get(stageOfSibling(stage)) ?? []).map(
        (o) => ({
          ...stageDone(stage, resultFor(o)),
          outcome: o.name,
          from: stage,
        }),
      ),
      // A stage that fails before its model is called gives a control event no time to arrive.
      ...(refusedHere(pipeline, snapshot, stage)
        ? []
        : controlEventsFrom(pipeline, stageOfSibling(stage), options.events ?? [])
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
  return {
    input: { runId: "model", ctx: options.ctx },
    events,
    // The verdicts too: a join's inputsSchema may refuse a failed sibling's result.
    serializeState: (snapshot) =>
      JSON.stringify([
        snapshot.value,
        // By stage id: the same counts are the same state, whatever order stages were entered in.
        sortedEntries(snapshot.context.visits),
        groupsKey(pipeline, snapshot),
        snapshot.context.upstream.map((r) => r.verdict),
        groupOf(snapshot) !== undefined && !isMap(pipeline, groupOf(snapshot))
          ? Object.fromEntries(settledSiblings(pipeline, snapshot))
          : {},
        options.tallies ? (snapshot.context.tallies ?? {}) : {},
      ]),
    outcomes,
  };
}

/**
 * A stage's outcomes where it runs now: only `inputs-refused` when its inputsSchema refuses what
 * it receives or its prompt reads an upstream result it does not receive.
 */
const sortedEntries = <V>(table: StageTable<V>): [string, V][] =>
  [...entriesOf(table)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

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
 * The groups' sibling states, by group. A map group's items are alike to the model (one stage,
 * the same outcomes), so its states are told apart by how many items are queued, running and
 * settled so (see `settledSiblings`), not by which: a list of n items is O(n²) states, not 3ⁿ.
 * The join receives the results in list order, which a code join could tell apart; the model
 * does not.
 */
function groupsKey(pipeline: PipelineDefinition, snapshot: ModelSnapshot): unknown[] {
  const seen = settledSiblings(pipeline, snapshot);
  return Object.entries(snapshot.context.groups)
    .map(([group, states]) =>
      isMap(pipeline, group)
        ? [
            group,
            [...entriesOf(states)].map(([item, state]) => state + (seen.get(item) ?? "")).sort(),
          ]
        : [group, sortedEntries(states)],
    )
    .sort();
}

const isMap = (pipeline: PipelineDefinition, group: string | undefined): boolean =>
  group !== undefined && pipeline.next[group]?.kind === "map";

/**
 * What the group running now can tell apart of its settled siblings, by sibling: whether each
 * counts towards `any`/`quorum`, whether the join's inputsSchema refuses it, or its verdict when
 * the join is code (which may read anything). Without it, two sibling orders that join
 * differently would be one state.
 */
function settledSiblings(
  pipeline: PipelineDefinition,
  snapshot: ModelSnapshot,
): Map<string, string> {
  const group = groupOf(snapshot);
  const transition = group === undefined ? undefined : pipeline.next[group];
  const siblings = group === undefined ? undefined : groupSiblingsOf(pipeline, group);
  if (group === undefined || !siblings || transition?.kind === "rules" || !transition)
    return new Map();
  const join = pipeline.stages[transition.join];
  const counts = transition.policy.kind === "any" || transition.policy.kind === "quorum";
  const { context } = snapshot;
  return new Map(
    siblingIds(context, group, siblings).flatMap((sibling): [string, string][] => {
      const result = lookup(context.results, sibling);
      if (siblingState(context, group, sibling) !== "settled" || !result) return [];
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
