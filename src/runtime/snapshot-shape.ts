import type { AnyActorRef, AnyStateMachine } from "xstate";
import type { PipelineContext } from "../compiler/pipeline-context.js";
import { groupAsRun } from "../compiler/pipeline-group-run.js";
import { runningStages } from "../compiler/pipeline-parallel.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import type { StageMachineContext } from "../compiler/stage-context.js";
import { isSiblingState, tableOf } from "../compiler/stage-table.js";
import { isRecord } from "../definitions/contract.js";
import { StagechartError, toStagechartError } from "../errors.js";
import * as z from "../zod.js";

/**
 * The shape of a stored run snapshot, checked before it is restored: the pipeline
 * machine's snapshot, whose children are stage machines (with their own snapshots), code stages,
 * sub-pipelines and the promise actors of calls in flight. Only what restoring and resuming read
 * is checked; anything else may be there.
 */

const STATUSES = ["active", "done", "error", "stopped"] as const;

type StateValue = string | { [key: string]: StateValue };
const stateValue: z.ZodMiniType<StateValue> = z.lazy(() =>
  z.union([z.string(), z.record(z.string(), stateValue)]),
);

const count = z.number().check(z.int(), z.gte(0));
const record = z.record(z.string(), z.unknown());
const stageResult = z.looseObject({
  stageId: z.string(),
  stageExecutionId: z.string(),
  verdict: z.enum(["ok", "retry", "skip", "fail"]),
  capHit: z.boolean(),
  attemptCount: count,
});

/**
 * What a context keeps per stage: a `StageTable` (buckets of entries by stage id), or, stored
 * before it kept tables, one plain object of entries (see `contextAsTables`).
 */
const perStage = (entry: z.ZodMiniType) =>
  z.record(z.string(), z.union([entry, z.record(z.string(), entry)]));

const pipelineContext = z.looseObject({
  pipelineId: z.string(),
  runId: z.string(),
  ctx: record,
  visits: perStage(count),
  entered: z.optional(count),
  enteredBefore: z.optional(count),
  modelCalls: perStage(count),
  results: perStage(stageResult),
  lastEnded: z.optional(z.string()),
  upstream: z.array(stageResult),
  upstreamOf: perStage(z.array(stageResult)),
  current: z.optional(z.string()),
  groups: z.record(z.string(), perStage(z.enum(["queued", "running", "settled"]))),
});

const stageContext = z.looseObject({
  stage: z.looseObject({
    id: z.string(),
    allowedTools: z.array(z.string()),
    completionTool: z.string(),
    retryPolicy: z.looseObject({ maxAttempts: count, delayMs: count }),
    turnCap: count,
    resolutionPolicy: z.string(),
  }),
  runId: z.string(),
  stageExecutionId: z.string(),
  ctx: record,
  upstream: z.array(stageResult),
  stagesBefore: z.optional(count),
  envelope: z.array(z.string()),
  attempt: count,
  turn: count,
  modelCalls: count,
  modelCallsBefore: count,
  batch: z.array(z.looseObject({ proposalId: z.string(), tool: z.string() })),
  callIndex: count,
  grants: z.record(z.string(), z.looseObject({ tool: z.string(), argsDigest: z.string() })),
  providerFailures: count,
  waitUntil: z.number(),
  deadline: z.optional(z.number()),
  capHit: z.boolean(),
});

const askContext = z.looseObject({
  request: z.looseObject({
    runId: z.string(),
    stageId: z.string(),
    stageExecutionId: z.string(),
    prompt: z.string(),
    schema: record,
  }),
  deadline: z.optional(z.number()),
});

const child = z.looseObject({ src: z.string(), snapshot: z.unknown() });

const machineSnapshot = (context: z.ZodMiniType) =>
  z.looseObject({
    status: z.enum(STATUSES),
    value: stateValue,
    context,
    children: z.record(z.string(), child),
  });

const pipelineSnapshot = machineSnapshot(pipelineContext);
const stageSnapshot = machineSnapshot(stageContext);
const askSnapshot = machineSnapshot(askContext);
/** A promise actor (a code stage, a call in flight): restarted from its input when active. */
const promiseSnapshot = z.looseObject({ status: z.enum(STATUSES), input: z.unknown() });

/** Act's worker: it keeps nothing; a restored one makes the call its stage waits for. */
const workerSnapshot = z.looseObject({ status: z.enum(STATUSES) });

/**
 * The schema of a child by its `src`: a stage machine, a sub-pipeline, Act's worker, or a
 * promise actor.
 */
const schemaOfChild = (src: string): z.ZodMiniType =>
  src === "stage"
    ? stageSnapshot
    : src === "ask"
      ? askSnapshot
      : src === "actWorker"
        ? workerSnapshot
        : src.startsWith("pipeline:")
          ? pipelineSnapshot
          : promiseSnapshot;

/** Where a snapshot's shape is wrong, as `path: problem`; empty when it has the expected shape. */
function shapeProblems(snapshot: unknown, schema: z.ZodMiniType, at: string[] = []): string[] {
  const parsed = schema.safeParse(snapshot);
  if (!parsed.success)
    return parsed.error.issues.map(
      (issue) => `${[...at, ...issue.path.map(String)].join(".") || "snapshot"}: ${issue.message}`,
    );
  const children = (parsed.data as { children?: Record<string, z.infer<typeof child>> }).children;
  return Object.entries(children ?? {}).flatMap(([id, { src, snapshot: inner }]) =>
    shapeProblems(inner, schemaOfChild(src), [...at, "children", id, "snapshot"]),
  );
}

/**
 * Why a run's stored snapshot is not its pipeline machine's (`Session/SnapshotCorrupt`), if it
 * is not.
 */
export function checkSnapshotShape(runId: string, snapshot: unknown): StagechartError | undefined {
  const problems = shapeProblems(snapshot, pipelineSnapshot);
  if (problems.length > 0) return damagedSnapshot(runId, problems.join("; "));
  const owner = (snapshot as { context: { runId: string } }).context.runId;
  if (owner !== runId)
    return damagedSnapshot(runId, `context.runId: the snapshot is of run ${owner}`);
  return undefined;
}

/**
 * Where a restored actor tree lacks the child an active state invokes (a call, a stage): such a
 * state would wait forever for an actor that is not there. Empty when nothing is missing.
 */
/**
 * Why a restored actor cannot go on, or undefined when it can: XState could not restore its
 * snapshot (the actor is then in `error`, it does not throw), or a state's invoked actor is
 * missing (see `missingInvocations`).
 */
export function restoreProblem(actor: AnyActorRef): string | undefined {
  const state = actor.getSnapshot() as { status: string; error?: unknown };
  try {
    if (state.status === "error") throw state.error;
    const missing = missingInvocations(actor);
    return missing.length > 0 ? missing.join("; ") : undefined;
  } catch (error) {
    return toStagechartError(error, "Session/SnapshotCorrupt").message;
  }
}

export function missingInvocations(actor: AnyActorRef, at = ""): string[] {
  const snapshot = actor.getSnapshot() as {
    status: string;
    value?: StateValue;
    machine?: AnyStateMachine;
    children?: Record<string, AnyActorRef>;
  };
  if (snapshot.status !== "active" || !snapshot.machine || snapshot.value === undefined) return [];
  const children = snapshot.children ?? {};
  const invoked = activeNodes(snapshot.machine.root, snapshot.value).flatMap((node) =>
    node.invoke.map((invoke) => invoke.id),
  );
  const missing = [...invoked, ...runningSiblings(actor)]
    .filter((id) => !children[id])
    .map((id) => `${at}children.${id}: the actor its state invokes is missing`);
  return [
    ...missing,
    ...Object.entries(children).flatMap(([id, ref]) =>
      missingInvocations(ref, `${at}children.${id}.`),
    ),
  ];
}

/** A pipeline's running group siblings, which its group spawned rather than invoked. */
function runningSiblings(actor: AnyActorRef): string[] {
  const context = actor.getSnapshot().context as Partial<PipelineContext> | undefined;
  const current = context?.current;
  if (!current || !context.groups || stageOfState(current) === current) return [];
  return runningStages(context as PipelineContext);
}

/** What the walk needs of a state node. */
interface NodeView {
  invoke: readonly { id: string }[];
  states: Record<string, NodeView>;
}

function activeNodes(node: NodeView, value: StateValue): NodeView[] {
  const entries = typeof value === "string" ? [[value, undefined] as const] : Object.entries(value);
  return [
    node,
    ...entries.flatMap(([key, inner]) => {
      const next = node.states[key];
      if (!next) return [];
      return inner === undefined ? [next] : activeNodes(next, inner);
    }),
  ];
}

export const damagedSnapshot = (runId: string, problem: string): StagechartError =>
  new StagechartError(
    "Session/SnapshotCorrupt",
    `the stored snapshot of run ${runId} is damaged: ${problem}`,
    { runId },
  );

/**
 * A stored snapshot in the shape the compiled machines restore today: parallel groups as they
 * run (`groupAsRun`), and stages stored by the machine of before 2026-11-25, whose Setup,
 * Init, CheckGate, Assert and Exit were each a state with an actor of its own, and whose every
 * model and tool call was an actor, as the states that run those phases together and Act's
 * one worker (`stageAsCompiled`).
 */
export function currentShape(snapshot: unknown): unknown {
  return stagesAsCompiled(
    inEveryPipeline(snapshot, (pipeline) => withContextTables(groupAsRun(pipeline))),
  );
}

/** `snapshot` with `upgrade` applied to it and to each sub-pipeline's snapshot below it. */
function inEveryPipeline(
  snapshot: unknown,
  upgrade: (pipeline: Record<string, unknown>) => Record<string, unknown>,
): unknown {
  if (!isRecord(snapshot)) return snapshot;
  if (!isRecord(snapshot.children)) return upgrade(snapshot);
  const children = Object.fromEntries(
    Object.entries(snapshot.children).map(([id, child]) => [
      id,
      isRecord(child) && String(child.src).startsWith("pipeline:")
        ? { ...child, snapshot: inEveryPipeline(child.snapshot, upgrade) }
        : child,
    ]),
  );
  return upgrade({ ...snapshot, children });
}

/**
 * A pipeline snapshot stored before its context kept per-stage entries in `StageTable`s, with
 * them in tables (its sub-pipelines' too): the run's results, visits, model calls, what each
 * stage received and each group's sibling states were plain objects by stage id, the last of
 * `results` being the stage that ended last. A snapshot in today's shape is returned as it is.
 */
export const contextAsTables = (snapshot: unknown): unknown =>
  inEveryPipeline(snapshot, withContextTables);

function withContextTables(snapshot: Record<string, unknown>): Record<string, unknown> {
  const context = snapshot.context;
  if (!isRecord(context)) return snapshot;
  const flat = (
    field: unknown,
    isEntry: (value: unknown) => boolean,
  ): Record<string, unknown> | undefined =>
    isRecord(field) && Object.values(field).some(isEntry) ? field : undefined;
  const upgraded: Record<string, unknown> = { ...context };
  for (const key of ["visits", "modelCalls"] as const) {
    const entries = flat(context[key], isVisitCount);
    if (entries) upgraded[key] = tableOf(entries);
  }
  const upstreamOf = flat(context.upstreamOf, Array.isArray);
  if (upstreamOf) upgraded.upstreamOf = tableOf(upstreamOf);
  const results = flat(context.results, isStageResult);
  if (results) {
    upgraded.results = tableOf(results);
    const last = Object.keys(results).at(-1);
    if (last !== undefined && context.lastEnded === undefined) upgraded.lastEnded = last;
  }
  if (isRecord(context.groups))
    upgraded.groups = Object.fromEntries(
      Object.entries(context.groups).map(([group, states]) => {
        const entries = flat(states, isSiblingState);
        return [group, entries ? tableOf(entries) : states];
      }),
    );
  return { ...snapshot, context: upgraded };
}

const isVisitCount = (value: unknown): boolean => typeof value === "number";
const isStageResult = (value: unknown): boolean =>
  isRecord(value) && typeof value.verdict === "string";

function stagesAsCompiled(snapshot: unknown): unknown {
  if (!isRecord(snapshot) || !isRecord(snapshot.children)) return snapshot;
  const children = Object.fromEntries(
    Object.entries(snapshot.children).map(([id, child]) => {
      if (!isRecord(child)) return [id, child];
      if (child.src === "stage")
        return [id, { ...child, snapshot: stageAsCompiled(child.snapshot) }];
      if (String(child.src).startsWith("pipeline:"))
        return [id, { ...child, snapshot: stagesAsCompiled(child.snapshot) }];
      return [id, child];
    }),
  );
  return { ...snapshot, children };
}

/**
 * An earlier stage snapshot parked in one of the phases that are now run together: in Setup or
 * Assert, its actor is the one of the new state, which runs the next phases too; in Init (set
 * up), the new Setup state's actor, told what Setup gave; in Exit (asserted), the new Assert
 * state's actor, told the verdict. Each phase already audited is not run (nor audited) again.
 */
export function stageAsCompiled(snapshot: unknown): unknown {
  if (!isRecord(snapshot) || !isRecord(snapshot.children) || !isRecord(snapshot.context))
    return snapshot;
  if (isRecord(snapshot.value) && "act" in snapshot.value) return actAsCompiled(snapshot);
  const context = snapshot.context as Partial<StageMachineContext>;
  const [entry] = Object.entries(snapshot.children);
  const [, child] = entry ?? [];
  if (!isRecord(child) || !isRecord(child.snapshot)) return snapshot;
  const stored = child.snapshot;
  const input = (stored.input ?? {}) as Record<string, unknown>;
  const rebuilt = (state: "setup" | "assert", src: string, next: Record<string, unknown>) => ({
    ...snapshot,
    value: state,
    children: {
      [`0.stage.${state}`]: { ...child, src, snapshot: { ...stored, input: next } },
    },
  });
  const outputFields =
    context.outputFields !== undefined ? { outputFields: context.outputFields } : {};
  switch (child.src) {
    case "setupStage":
      return rebuilt("setup", "enterStage", input);
    case "initStage": {
      const { stage, runId, stageExecutionId, ctx, upstream, stageContext, envelope } = context;
      const setUp = { stageContext, envelope };
      return rebuilt("setup", "enterStage", {
        stage,
        runId,
        stageExecutionId,
        ctx,
        upstream,
        setUp,
      });
    }
    case "assertStage":
      return rebuilt("assert", "finishStage", { ...input, ...outputFields });
    case "exitStage": {
      const { verdict, reason, outputFields: _handedOn, ...asserted } = input;
      const decided = { verdict, ...(reason !== undefined && { reason }) };
      return rebuilt("assert", "finishStage", { ...asserted, ...outputFields, decided });
    }
    default:
      return snapshot;
  }
}

/** Calls the stage's Act made as an actor each: Act's worker (`actWorker`) makes them now. */
const CALL_ACTORS = new Set(["callModel", "runTool"]);

/**
 * An earlier stage snapshot in Act, whose call in flight (if any) was an actor of its own: the
 * worker of today in its place, which makes the call the stage's state waits for as it starts.
 */
function actAsCompiled(snapshot: Record<string, unknown>): Record<string, unknown> {
  const children = snapshot.children as Record<string, unknown>;
  if ("worker" in children) return snapshot;
  const kept = Object.entries(children).filter(
    ([, child]) => !(isRecord(child) && CALL_ACTORS.has(String(child.src))),
  );
  const worker = { src: "actWorker", snapshot: { status: "active" }, syncSnapshot: false };
  return { ...snapshot, children: { ...Object.fromEntries(kept), worker } };
}
