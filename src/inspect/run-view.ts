import { groupName } from "../compiler/group-description.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { isSiblingState, storedEntries } from "../compiler/stage-table.js";
import { isRecord } from "../definitions/contract.js";
import { stagePathOf } from "../definitions/stage-descriptions.js";
import type { Result } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import type { RunRecord, StoredSnapshot } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import type { RunWait } from "../runtime/suspension.js";
import { type RunTokenCount, tokenUsage } from "./token-usage.js";

/** One run as `show --json` prints it and the visualizer's API serves it. */
export interface RunView extends RunRecord {
  /** The state value of the run's latest snapshot. */
  state?: unknown;
  /**
   * When the run is in a parallel group: the group as users name it, by its siblings
   * (`test ∥ lint`), where `state` has the compiler's name for it (`execute_parallel`).
   */
  group?: string;
  stages: StageSummary[];
  /** What a suspended run waits for. */
  waiting?: RunWait[];
  tokens: RunTokenCount;
  timeline: AuditEvent[];
}

export interface StageSummary {
  stageId?: string;
  stageExecutionId?: string;
  verdict?: string;
  reason?: string;
  /** What the stage is for, as its definition says (see `stageDescriptionsByPath`). */
  description?: string;
}

/** A run as `show` and the visualizer describe it, on either store. */
export async function describeStoredRun(store: RunStore, runId: string): Promise<Result<RunView>> {
  const run = await store.getRun(runId);
  if (!run.ok) return run;
  const [timeline, snapshot] = [await store.auditOf(runId), await store.getSnapshot(runId)];
  return { ok: true, value: viewOf(run.value, timeline, snapshot) };
}

function viewOf(run: RunRecord, timeline: AuditEvent[], snapshot: Result<StoredSnapshot>): RunView {
  // A damaged event stays in the timeline, marked; what is read from events skips it.
  const events = timeline.filter((e) => e.damaged === undefined);
  const latest = snapshot.ok
    ? (snapshot.value.snapshot as { value?: unknown; context?: unknown })
    : undefined;
  const state = latest?.value;
  const group = groupOf(state, latest?.context, run.options.outline);
  const waiting =
    run.status === "suspended"
      ? (events.findLast((e) => e.type === "RunSuspended")?.payload.waiting as
          | RunWait[]
          | undefined)
      : undefined;
  const started = events.find((e) => e.type === "RunStarted")?.payload.stageDescriptions;
  const descriptions = (isRecord(started) ? started : {}) as Record<string, unknown>;
  return {
    ...run,
    state,
    ...(group !== undefined && { group }),
    stages: events
      .filter((e) => e.type === "StageExited")
      .map((event) => stageSummary(event, descriptions)),
    ...(waiting && { waiting }),
    tokens: tokenUsage(events),
    timeline,
  };
}

function stageSummary(event: AuditEvent, descriptions: Record<string, unknown>): StageSummary {
  const { verdict, reason } = event.payload as { verdict?: string; reason?: string };
  const path = event.stageExecutionId && stagePathOf(event.runId, event.stageExecutionId);
  const description = path ? descriptions[path] : undefined;
  return {
    stageId: event.stageId,
    stageExecutionId: event.stageExecutionId,
    verdict,
    ...(reason && { reason }),
    ...(typeof description === "string" && { description }),
  };
}

/**
 * The group a run in a group's state is in, named by its siblings: in declared order, as the
 * run's stored outline lists them, or (a run stored without one) as its snapshot keeps them, in
 * a stage table or, stored before those, one plain object.
 */
function groupOf(state: unknown, context: unknown, outline: unknown): string | undefined {
  if (typeof state !== "string" || !isRecord(context) || !isRecord(context.groups))
    return undefined;
  const from = stageOfState(state);
  if (from === state) return undefined;
  const transition = isRecord(outline) && isRecord(outline.next) ? outline.next[from] : undefined;
  if (isRecord(transition) && transition.kind === "parallel" && Array.isArray(transition.siblings))
    return groupName(transition.siblings.map(String));
  const siblings = context.groups[from];
  if (!isRecord(siblings)) return undefined;
  return groupName(storedEntries(siblings, isSiblingState).map(([id]) => id));
}
