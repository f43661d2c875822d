import { randomUUID } from "node:crypto";
import { describeDrift, fingerprint } from "../compiler/definition-hash.js";
import type { Awaitable } from "../definitions/memory.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import {
  type ErrorView,
  err,
  ok,
  type Result,
  StagechartError,
  toStagechartError,
} from "../errors.js";
import { type Launch, type RunHandle, refusalOf } from "./launch.js";
import type { StepCommit } from "./persistence.js";
import { type ResumeOptions, resumeRun } from "./run.js";
import { checkContext } from "./run-checks.js";
import type { StoredStatus } from "./run-records.js";
import { checkSnapshotShape } from "./snapshot-shape.js";
import type { RunStore } from "./store-port.js";

/** What a fork takes of its source run's record. */
export interface ForkSource {
  runId: string;
  pipelineId: string;
  definitionHash: string;
  options: Record<string, unknown>;
}

/**
 * What forking needs of a store. Every answer is awaited, so the SQLite store
 * and `PostgresStore` all fit: one way to fork on either store.
 */
export interface ForkStore {
  getRun(runId: string): Awaitable<Result<ForkSource>>;
  stepsOf(runId: string): Awaitable<{ step: number }[]>;
  snapshotAtStep(runId: string, step: number): Awaitable<unknown>;
  forkRun(
    source: string,
    step: number,
    run: {
      runId: string;
      pipelineId: string;
      definitionHash: string;
      options: Record<string, unknown>;
      status?: StoredStatus;
    },
    first: StepCommit,
  ): Awaitable<Result<unknown>>;
  updateRun(
    runId: string,
    patch: { status: "failed"; error: ErrorView },
  ): Awaitable<Result<unknown>>;
  commitStep(runId: string, step: StepCommit): Awaitable<unknown>;
}

/** Which step of which stored run a new run starts from, and what changes in it. */
export interface ForkSettings {
  /** The step of the source run to start from (`stagechart history` lists them). */
  at: number;
  /** The new run's id; generated when not given. */
  runId?: string;
  /** ctx fields to change in the new run, on top of the ctx it had at that step. */
  set?: Record<string, unknown>;
  /** Stored with the new run instead of the source's settings, as a whole (what resuming it needs: model, root…). */
  resumeWith?: Record<string, unknown>;
  /** Stored `queued`, for a worker to take, instead of `running` for this process to resume. */
  queued?: boolean;
  /** Fork even though the pipeline changed since the source was saved (else `Session/DefinitionDrift`). */
  force?: boolean;
  /**
   * The source run's record as the caller read it already (`fork` does, for its settings); read
   * here when not given, or when it is another run's.
   */
  source?: ForkSource;
}

export interface ForkOptions extends ResumeOptions, Omit<ForkSettings, "queued" | "force"> {
  store: RunStore;
}

/**
 * What the fork's first launch would refuse of what it will be asked (answers, inputs, a
 * control event), checked on its snapshot before it is stored (`refusalOf` does it).
 */
export type ForkRefusal = (
  fork: Pick<Launch, "runId" | "ctx" | "snapshot">,
) => StagechartError | undefined;

/** What `createFork` stored: the new run's id and the definition it runs. */
export interface CreatedFork {
  runId: string;
  pipelineId: string;
  definitionHash: string;
}

/**
 * Starts a new run from step `at` of a stored run: `createFork`, then the fork
 * resumed in this process (`resumeRun`'s options: answers, inputs, control, force); a resume
 * refused ends the fork (`endRefusedFork`), on any store.
 */
export async function forkRun(
  pipeline: PipelineDefinition,
  sourceRunId: string,
  options: ForkOptions,
): Promise<Result<RunHandle>> {
  const { host, answers, inputs, control } = options;
  const created = await createFork(pipeline, sourceRunId, {
    ...options,
    refusal: (fork) => refusalOf(pipeline, host, { ...fork, answers, inputs, control }),
  });
  if (!created.ok) return created;
  const resumed = await resumeRun(pipeline, created.value.runId, options);
  return resumed.ok
    ? resumed
    : err(await endRefusedFork(options.store, created.value.runId, resumed.error));
}

/**
 * Ends a fork whose first resume was refused all the same (what `ForkRefusal` could not see: a
 * store failing, a pipeline file changed in between): `failed` with the refusal, its audit
 * closing with `RunFailed {refused: true}`, so that no resume and no worker ever runs it. It is
 * kept, not deleted: the stores have no way to remove a run. The error to report: the refusal,
 * or the store's when it could not end it.
 */
export async function endRefusedFork(
  store: ForkStore,
  runId: string,
  refusal: StagechartError,
): Promise<StagechartError> {
  const error = refusal.toModelView();
  try {
    const ended = await store.updateRun(runId, { status: "failed", error });
    if (!ended.ok) return ended.error;
    await store.commitStep(runId, {
      events: [{ type: "RunFailed", runId, payload: { status: "failed", refused: true, error } }],
    });
    return refusal;
  } catch (failure) {
    return toStagechartError(failure, "Session/StoreUnavailable");
  }
}

/**
 * Stores a new run made from step `at` of a stored run, on either store: the snapshot that
 * step committed, under a new run id, with the journal entries and transcripts recorded by then
 * copied to it, so recorded calls are not made again and conversations go on. The source run is
 * not touched. The new run's audit log opens with `RunForked {from: {runId, step}, set?}`; it is
 * `running` until resumed (or `queued`, for a worker). Nothing is launched here.
 */
export async function createFork(
  pipeline: PipelineDefinition,
  sourceRunId: string,
  options: ForkSettings & { store: ForkStore; refusal?: ForkRefusal },
): Promise<Result<CreatedFork>> {
  const { store, at, set } = options;
  const source =
    options.source?.runId === sourceRunId ? ok(options.source) : await store.getRun(sourceRunId);
  if (!source.ok) return source;
  const drift = options.force ? undefined : driftFrom(pipeline, sourceRunId, source.value);
  if (drift) return err(drift);
  const steps = (await store.stepsOf(sourceRunId)).map(({ step }) => step);
  if (!steps.includes(at)) return err(stepUnknown(sourceRunId, at, steps));
  const stored = await store.snapshotAtStep(sourceRunId, at);
  if (stored === undefined) return err(historyPruned(sourceRunId, at));
  const damaged = checkSnapshotShape(sourceRunId, stored);
  if (damaged) return err(damaged);

  const runId = options.runId ?? `run-${randomUUID().slice(0, 8)}`;
  const snapshot = withCtx(renamed(stored, sourceRunId, runId), set ?? {});
  const ctx = (snapshot as { context: { ctx: Record<string, unknown> } }).context.ctx;
  const invalid = checkContext(pipeline, ctx);
  if (invalid) return err(invalid);
  const refused = options.refusal?.({ runId, ctx, snapshot: snapshot as Launch["snapshot"] });
  if (refused) return err(refused);
  const { pipelineId, definitionHash } = source.value;
  const forked = await store.forkRun(
    sourceRunId,
    at,
    {
      runId,
      pipelineId,
      definitionHash,
      options: forkedOptions(source.value.options, options.resumeWith, ctx),
      ...(options.queued && { status: "queued" as const }),
    },
    {
      snapshot,
      events: [
        {
          type: "RunForked",
          runId,
          payload: {
            pipelineId,
            from: { runId: sourceRunId, step: at },
            ...(set && Object.keys(set).length > 0 && { set }),
          },
        },
      ],
    },
  );
  return forked.ok ? ok({ runId, pipelineId, definitionHash }) : forked;
}

/** Checked before the fork is stored: its resume, unforced, would refuse a changed pipeline. */
function driftFrom(
  pipeline: PipelineDefinition,
  runId: string,
  source: { definitionHash: string; options: Record<string, unknown> },
): StagechartError | undefined {
  const { hash, parts } = fingerprint(pipeline);
  if (hash === source.definitionHash) return undefined;
  const before = (source.options.definition ?? {}) as Record<string, string>;
  const changes = describeDrift(before, parts);
  return new StagechartError(
    "Session/DefinitionDrift",
    `the pipeline changed since run ${runId} was saved: ${changes.join(", ") || "its compiled form differs"} (--force to fork anyway)`,
    { runId, changes },
  );
}

/** A step before the run's last snapshot, once a prune cut its history (`historyOnly`). */
const historyPruned = (runId: string, step: number): StagechartError =>
  new StagechartError(
    "Session/ForkUnavailable",
    `run ${runId} keeps no snapshot of step ${step}: its step history was pruned down to its last snapshot; fork from its last step instead`,
    { runId, step },
  );

const stepUnknown = (runId: string, step: number, steps: number[]): StagechartError =>
  new StagechartError(
    "Validation/ForkStepUnknown",
    `run ${runId} has no step ${step}${steps.length ? ` (its steps are ${steps[0]}–${steps.at(-1)})` : " (it has no committed steps)"}`,
    { runId, step },
  );

/**
 * What the fork stores: the definition the source was started on (its parts and its outline),
 * the fork's ctx, and the settings resuming it needs — `resumeWith` as a whole when given, so
 * none of the source's settings that `resumeWith` leaves out (a flag about the source's model)
 * is carried over.
 */
function forkedOptions(
  source: Record<string, unknown>,
  resumeWith: Record<string, unknown> | undefined,
  ctx: Record<string, unknown>,
): Record<string, unknown> {
  const { ctx: _sourceCtx, definition, outline, ...settings } = source;
  return {
    ...(resumeWith ?? settings),
    ctx,
    ...(definition !== undefined && { definition }),
    ...(outline !== undefined && { outline }),
  };
}

/** The snapshot with every id of the source run (the run id, and ids under it) made the new run's. */
function renamed(value: unknown, from: string, to: string): unknown {
  const rename = (text: string) =>
    text === from ? to : text.startsWith(`${from}/`) ? `${to}${text.slice(from.length)}` : text;
  if (typeof value === "string") return rename(value);
  if (Array.isArray(value)) return value.map((item) => renamed(item, from, to));
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [rename(key), renamed(inner, from, to)]),
    );
  return value;
}

/** The snapshot with `set` merged into the ctx of every machine in it that has one. */
function withCtx(snapshot: unknown, set: Record<string, unknown>): unknown {
  if (Object.keys(set).length === 0 || !snapshot || typeof snapshot !== "object") return snapshot;
  const node = snapshot as {
    context?: { ctx?: Record<string, unknown> };
    children?: Record<string, { snapshot?: unknown }>;
  };
  const context =
    node.context?.ctx && typeof node.context.ctx === "object"
      ? { ...node.context, ctx: { ...node.context.ctx, ...set } }
      : node.context;
  const children =
    node.children &&
    Object.fromEntries(
      Object.entries(node.children).map(([id, child]) => [
        id,
        { ...child, snapshot: withCtx(child.snapshot, set) },
      ]),
    );
  return { ...node, ...(context && { context }), ...(children && { children }) };
}
