import { type AnyStateMachine, createActor, createMachine } from "xstate";
import type { PipelineContext } from "../compiler/pipeline-context.js";
import { createPipelineMachine } from "../compiler/pipeline-machine.js";
import { groupSiblingsOf, siblingIds, siblingStates } from "../compiler/pipeline-parallel.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { lookup } from "../compiler/stage-table.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { AuditEventInput } from "../events/audit.js";

/**
 * The pipeline's compiled machine, the one its runs are provided from (`compiledPipeline`), with
 * stages that never run by themselves: a test moves it on by sending the done events of
 * `stageDone`. `audit` hears what the machine records.
 */
export function modelMachine(
  pipeline: PipelineDefinition,
  audit: (event: AuditEventInput) => void = () => undefined,
): AnyStateMachine {
  return createPipelineMachine(pipeline, {
    stageMachine: createMachine({ id: "stage" }),
    askMachine: createMachine({ id: "ask" }),
    runCode: () => new Promise(() => undefined),
    audit,
  });
}

/**
 * The stages whose child runs in a snapshot: the current stage, or the running siblings of the
 * group the run is in (kept in its context: the group is one state), in declaration order (a map
 * group's items, `review-file[0]`, in list order) given the pipeline.
 */
export function activeStages(
  snapshot: { value: unknown; context?: unknown },
  pipeline?: PipelineDefinition,
): string[] {
  const { value } = snapshot;
  if (typeof value !== "string" || isEnd(value)) return [];
  const group = stageOfState(value);
  if (group === value) return [value];
  const context = snapshot.context as PipelineContext | undefined;
  const declared = pipeline && groupSiblingsOf(pipeline, group);
  const order = declared && context && siblingIds(context, group, declared);
  const siblings = context ? siblingStates(context, group, order) : [];
  return [...siblings].flatMap(([sibling, state]) => (state === "running" ? [sibling] : []));
}

/**
 * How many times a snapshot's run entered `stageId` (0 before it did): the model's context keeps
 * its counts in a stage table, not as a plain object.
 */
export function visitsOf(snapshot: { context?: unknown }, stageId: string): number {
  const context = snapshot.context as PipelineContext | undefined;
  return context ? (lookup(context.visits, stageId) ?? 0) : 0;
}

export type PathEnd = "done" | "failed" | "cancelled" | "suspended";

const ENDS = new Set(["done", "failed", "cancelled"]);
export const isEnd = (value: unknown): value is Exclude<PathEnd, "suspended"> =>
  typeof value === "string" && ENDS.has(value);

/**
 * What a run of the model records, in the words of the audit log: `plan → execute (sequential)`,
 * `list-files → review-file ×2 (map)`.
 */
export function describeTransition(event: AuditEventInput): string | undefined {
  const { payload } = event;
  const names = (v: unknown) => (Array.isArray(v) ? v.join(",") : String(v));
  // A map group's entry names its items: a run given another list than the path's leaves it.
  const items = typeof payload.items === "number" ? ` ×${payload.items}` : "";
  if (event.type === "SMTransition")
    return `${names(payload.from)} → ${names(payload.to)}${items} (${String(payload.kind)})`;
  if (event.type === "ParallelSiblingFailure")
    return `${names(payload.failed)} failed the group after ${String(payload.group)} (${String(payload.policy)})`;
  return undefined;
}

/** Replays events on the model: the transitions it records and where it ends, or the step it cannot take. */
export function traceModel(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  events: readonly { event: { type: string }; stage?: string }[],
): { transitions: string[]; end?: PathEnd; refused?: string } {
  const transitions: string[] = [];
  const actor = createActor(
    modelMachine(pipeline, (event) => {
      const text = describeTransition(event);
      if (text && event.payload.pipelineId === pipeline.id) transitions.push(text);
    }),
    { input: { runId: "model", ctx } },
  ).start();
  for (const [index, { event, stage }] of events.entries()) {
    const snapshot = actor.getSnapshot();
    if (stage !== undefined && !activeStages(snapshot).includes(stage)) {
      actor.stop();
      return { transitions, refused: `step ${index + 1}: ${stage} is not running then` };
    }
    actor.send(event as never);
  }
  const { value } = actor.getSnapshot();
  actor.stop();
  return { transitions, ...(isEnd(value) && { end: value }) };
}
