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
    stageId: sibling,
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
  siblings: readonly string[],
  join: Target,
  policy: JoinPolicy,
) {
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
              failed: failedSiblings(context, from, siblings),
            },
          }),
        },
        {
          type: "cancelRunning",
          params: ({ context }: { context: PipelineContext }) => ({
            reason: `sibling ${failedSiblings(context, from, siblings).join(", ")} failed (${policy.kind})`,
          }),
        },
        fail(({ context }: { context: PipelineContext }) => {
          const failed = failedSiblings(context, from, siblings);
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
            upstream: settledResults(context, from, siblings),
          }),
        },
        {
          type: "audit",
          params: { type: "SMTransition", payload: { from: siblings, to: join, kind: "join" } },
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

/** What a group's actions are given: the group (by its fan-out stage), its siblings, its cap. */
export interface GroupParams {
  group: string;
  siblings: readonly string[];
  maxConcurrency: number;
}

/** A group entered: its first `maxConcurrency` siblings running, the others queued. */
export function startedGroup(
  context: PipelineContext,
  { group, siblings, maxConcurrency }: GroupParams,
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
  result: StageResult,
): Pick<PipelineContext, "groups" | "tallies" | "results"> {
  const before = tallyOf(context, group);
  const tally = {
    ...before,
    running: before.running - 1,
    ok: before.ok + (succeeded(result) ? 1 : 0),
    failed: before.failed + (succeeded(result) ? 0 : 1),
  };
  const changed: [string, SiblingState][] = [[result.stageId, "settled"]];
  const next = siblings[tally.started];
  if (next !== undefined && tally.running < maxConcurrency) {
    changed.push([next, "running"]);
    tally.started += 1;
    tally.running += 1;
  }
  return {
    results: withEntry(context.results, result.stageId, result),
    groups: {
      ...context.groups,
      [group]: withEntries(context.groups[group] ?? EMPTY_TABLE, changed),
    },
    tallies: { ...context.tallies, [group]: tally },
  };
}

/** A group's tally: the one kept, or (for a snapshot stored before it was kept) counted once. */
export function tallyOf(context: PipelineContext, group: string): GroupTally {
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
  const transition = pipeline?.next[group];
  const siblings = transition?.kind === "parallel" ? transition.siblings : undefined;
  return [...siblingStates(context, group, siblings)].flatMap(([id, state]) =>
    state === "running" ? [id] : [],
  );
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
