import type { StageResult } from "../definitions/contract.js";
import type { JoinPolicy, PipelineDefinition, Target } from "../definitions/pipeline-types.js";
import type { GroupTally, PipelineContext, SiblingState } from "./pipeline-context.js";
import { executionId, fail, stageOfState, stateOf } from "./pipeline-states.js";
import { viewOf } from "./stage-entries.js";
import {
  EMPTY_TABLE,
  entriesOf,
  lookup,
  type StageTable,
  withEntries,
  withEntry,
} from "./stage-table.js";

/** What a sibling whose actor crashed (threw, or failed to start) settles with. */
export function crashedResult(context: PipelineContext, sibling: string): StageResult {
  return {
    stageId: stageOfSibling(sibling),
    stageExecutionId: executionId(context, sibling),
    verdict: "fail",
    reason: `stage ${sibling} crashed`,
    capHit: false,
    attemptCount: 1,
  };
}

/**
 * A group's eventless ways out, taken once its policy decides: to `failed`, or to its join. An
 * `all-settled` group joins whatever its siblings end with (`decideGroup` never fails it), so it
 * has no way to `failed`: an edge there could never be taken, nor covered by a test.
 */
export function groupDecisions(
  from: string,
  group: GroupSiblings,
  join: Target,
  policy: JoinPolicy,
) {
  const ids = (context: PipelineContext) => siblingIds(context, from, group);
  const decisions = [
    {
      guard: { type: "groupDecides", params: { group: from, policy, decision: "fail" } },
      target: "failed",
      description: `${describePolicy(policy)} policy failed`,
      actions: [
        {
          type: "audit",
          params: ({ context }: { context: PipelineContext }) => ({
            type: "ParallelSiblingFailure",
            payload: {
              group: from,
              policy: policy.kind,
              failed: failedSiblings(context, from, ids(context)),
            },
          }),
        },
        {
          type: "cancelRunning",
          params: ({ context }: { context: PipelineContext }) => ({
            reason: `sibling ${failedSiblings(context, from, ids(context)).join(", ")} failed (${policy.kind})`,
          }),
        },
        fail(({ context }: { context: PipelineContext }) => {
          const failed = failedSiblings(context, from, ids(context));
          return policy.kind === "fail-fast"
            ? viewOf(
                "ExtensionHost/ParallelSiblingFailure",
                `parallel sibling ${failed.join(", ")} failed, so the group after ${from} failed fast`,
                { sibling: failed[0], failed },
              )
            : viewOf(
                "ExtensionHost/ParallelPolicyUnmet",
                `the ${describePolicy(policy)} policy of the group after ${from} cannot be met`,
                { failed },
              );
        }),
      ],
    },
    {
      guard: { type: "groupDecides", params: { group: from, policy, decision: "join" } },
      target: stateOf(join),
      description: `${describePolicy(policy)} policy met`,
      actions: [
        {
          type: "cancelRunning",
          params: { reason: `the group after ${from} met its ${describePolicy(policy)} policy` },
        },
        {
          type: "handOn",
          params: ({ context }: { context: PipelineContext }) => ({
            upstream: settledResults(context, from, ids(context)),
          }),
        },
        {
          type: "audit",
          params: ({ context }: { context: PipelineContext }) => ({
            type: "SMTransition",
            payload: { from: ids(context), to: join, kind: "join" },
          }),
        },
      ],
    },
  ];
  return policy.kind === "all-settled" ? decisions.filter((d) => d.target !== "failed") : decisions;
}

/** A group's policy as the graph names it: `fail-fast`, `quorum 2`. */
export function describePolicy(p: JoinPolicy): string {
  return p.kind === "quorum" ? `quorum ${p.k}` : p.kind;
}

/**
 * A group's siblings: a parallel group's stages, declared; or a map group's items, one sibling
 * per item of the list it was entered with (`review-file[0]`, `review-file[1]`, …), counted in
 * its tally, so that no list of them is kept.
 */
export type GroupSiblings =
  | { kind: "static"; ids: readonly string[] }
  | { kind: "map"; stage: string };

/** A map group's sibling for the item at `index`: stage ids are kebab-case, so it names no stage. */
export const itemSibling = (stage: string, index: number): string => `${stage}[${index}]`;

const ITEM = /^(.*)\[(\d+)\]$/;

/** The stage a sibling runs: itself, or the stage a map group runs for its item. */
export const stageOfSibling = (sibling: string): string => ITEM.exec(sibling)?.[1] ?? sibling;

/** The index of a map group's item a sibling runs, if it runs one. */
export function itemIndexOf(sibling: string): number | undefined {
  const index = ITEM.exec(sibling)?.[2];
  return index === undefined ? undefined : Number(index);
}

/** The group's sibling at `index` in its order, if it has that many. */
function siblingAt(group: GroupSiblings, count: number, index: number): string | undefined {
  if (group.kind === "static") return group.ids[index];
  return index < count ? itemSibling(group.stage, index) : undefined;
}

/** A group's siblings in order: a map group's for the list it was entered with (O(items)). */
export function siblingIds(
  context: Pick<PipelineContext, "groups" | "tallies" | "results">,
  from: string,
  group: GroupSiblings,
): readonly string[] {
  if (group.kind === "static") return group.ids;
  const count = tallyOf(context, from).siblings;
  return Array.from({ length: count }, (_, index) => itemSibling(group.stage, index));
}

/** What a group's actions are given: the group (by its fan-out stage), its siblings, its cap. */
export interface GroupParams {
  group: string;
  siblings: GroupSiblings;
  maxConcurrency: number;
}

/**
 * A group entered with its siblings `ids` (a map group's decided now): its first
 * `maxConcurrency` running, the others queued.
 */
export function startedGroup(
  context: PipelineContext,
  { group, maxConcurrency }: GroupParams,
  siblings: readonly string[],
): Pick<PipelineContext, "groups" | "tallies"> {
  const started = Math.min(maxConcurrency, siblings.length);
  const states = withEntries(
    EMPTY_TABLE as StageTable<SiblingState>,
    siblings.map((sibling, index): [string, SiblingState] => [
      sibling,
      index < started ? "running" : "queued",
    ]),
  );
  const tally = { siblings: siblings.length, started, running: started, ok: 0, failed: 0 };
  return {
    groups: { ...context.groups, [group]: states },
    tallies: { ...context.tallies, [group]: tally },
  };
}

/** A sibling settled: counted, and the next queued sibling started if the cap allows. */
export function settledSibling(
  context: PipelineContext,
  { group, siblings, maxConcurrency }: GroupParams,
  sibling: string,
  result: StageResult,
): Pick<PipelineContext, "groups" | "tallies" | "results"> {
  const before = tallyOf(context, group);
  const tally = {
    ...before,
    running: before.running - 1,
    ok: before.ok + (succeeded(result) ? 1 : 0),
    failed: before.failed + (succeeded(result) ? 0 : 1),
  };
  const changed: [string, SiblingState][] = [[sibling, "settled"]];
  const next = siblingAt(siblings, tally.siblings, tally.started);
  if (next !== undefined && tally.running < maxConcurrency) {
    changed.push([next, "running"]);
    tally.started += 1;
    tally.running += 1;
  }
  return {
    results: withEntry(context.results, sibling, result),
    groups: {
      ...context.groups,
      [group]: withEntries(context.groups[group] ?? EMPTY_TABLE, changed),
    },
    tallies: { ...context.tallies, [group]: tally },
  };
}

/** A group's tally: the one kept, or (for a snapshot stored before it was kept) counted once. */
export function tallyOf(
  context: Pick<PipelineContext, "groups" | "tallies" | "results">,
  group: string,
): GroupTally {
  const kept = context.tallies?.[group];
  if (kept) return kept;
  const states = [...siblingStates(context, group)];
  const settled = states.filter(([, state]) => state === "settled");
  const ok = settled.filter(([id]) => succeeded(lookup(context.results, id))).length;
  return {
    siblings: states.length,
    started: states.filter(([, state]) => state !== "queued").length,
    running: states.filter(([, state]) => state === "running").length,
    ok,
    failed: settled.length - ok,
  };
}

/** Whether a parallel group is finished by its policy: `join`, `fail`, or not yet. */
export function decideGroup(policy: JoinPolicy, tally: GroupTally): "join" | "fail" | undefined {
  const { ok, failed } = tally;
  // A map group over an empty list has nothing to wait for: its join runs with no results.
  if (tally.siblings === 0) return "join";
  const pending = tally.siblings - ok - failed;
  switch (policy.kind) {
    case "fail-fast":
      return failed > 0 ? "fail" : pending === 0 ? "join" : undefined;
    case "all-settled":
      return pending === 0 ? "join" : undefined;
    case "any":
      return ok > 0 ? "join" : pending === 0 ? "fail" : undefined;
    case "quorum":
      return ok >= policy.k ? "join" : ok + pending < policy.k ? "fail" : undefined;
  }
}

/**
 * The stages running now: the current stage, or the running siblings of the current group (in
 * declaration order, given the pipeline).
 */
export function runningStages(context: PipelineContext, pipeline?: PipelineDefinition): string[] {
  if (!context.current) return [];
  const group = stageOfState(context.current);
  if (group === context.current) return [context.current];
  const siblings = pipeline && groupSiblingsOf(pipeline, group);
  const order = siblings && siblingIds(context, group, siblings);
  return [...siblingStates(context, group, order)].flatMap(([id, state]) =>
    state === "running" ? [id] : [],
  );
}

/** The siblings of the group a stage fans out to, if it fans out to one. */
export function groupSiblingsOf(
  pipeline: PipelineDefinition,
  from: string,
): GroupSiblings | undefined {
  const transition = pipeline.next[from];
  if (transition?.kind === "parallel") return { kind: "static", ids: transition.siblings };
  if (transition?.kind === "map") return { kind: "map", stage: transition.stage };
  return undefined;
}

/**
 * A group's siblings with their states: in declaration order given the group's `siblings`,
 * which is the order a join receives their results and events name them in.
 */
export function siblingStates(
  context: Pick<PipelineContext, "groups">,
  group: string,
  siblings?: readonly string[],
): Iterable<[string, SiblingState]> {
  const states = context.groups[group] ?? EMPTY_TABLE;
  if (siblings === undefined) return entriesOf(states);
  return siblings.flatMap((id): [string, SiblingState][] => {
    const state = lookup(states, id);
    return state === undefined ? [] : [[id, state]];
  });
}

/** A sibling's state in its group, if the group has started. */
export function siblingState(
  context: Pick<PipelineContext, "groups">,
  group: string,
  sibling: string,
): SiblingState | undefined {
  const states = context.groups[group];
  return states === undefined ? undefined : lookup(states, sibling);
}

/**
 * A sibling succeeds only with the verdict `ok`: `skip`, `retry` and `fail` all count as
 * failures, so `fail-fast` never joins a group in which a sibling did not do its work. A join
 * that can live with that uses `all-settled`.
 */
const succeeded = (result: StageResult | undefined): boolean => result?.verdict === "ok";

/** The settled siblings of a group that did not succeed. */
export function failedSiblings(
  context: PipelineContext,
  group: string,
  siblings: readonly string[],
): string[] {
  return [...siblingStates(context, group, siblings)].flatMap(([id, state]) =>
    state === "settled" && !succeeded(lookup(context.results, id)) ? [id] : [],
  );
}

export function settledResults(
  context: PipelineContext,
  group: string,
  siblings: readonly string[],
): StageResult[] {
  return [...siblingStates(context, group, siblings)].flatMap(([id, state]) => {
    const result = lookup(context.results, id);
    return state === "settled" && result ? [result] : [];
  });
}
