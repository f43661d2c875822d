import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActor, type InspectionEvent } from "xstate";
import type { Interactor } from "../compiler/interactor.js";
import { stageOfSibling } from "../compiler/pipeline-parallel.js";
import { lookup } from "../compiler/stage-table.js";
import type { StageResult } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { type AuditEvent, MemoryAuditLog } from "../events/audit.js";
import { createHost, type Host } from "../runtime/host.js";
import type { RunHandle } from "../runtime/launch.js";
import { startRun } from "../runtime/run.js";
import { type Drive, driveFor, drivenModel, ExitCounter, executionKey } from "./drive.js";
import { edgeKey } from "./edge-key.js";
import { controlEventOf, stageDone } from "./events.js";
import { activeStages, describeTransition, isEnd, modelMachine, type PathEnd } from "./model.js";
import { resultFor, type StageOutcome, stageOutcomes } from "./outcomes.js";
import type { PathStep, PipelinePath } from "./paths.js";
import { sampleContext } from "./paths.js";
import { type Fixtures, fittedOutput, stagesStoodIn, withStandIns } from "./stand-ins.js";
import { resultRecorder, stepMismatch } from "./step-outcomes.js";

/** What a path says the run does, and what the run did: its transitions and how it ended. */
export interface PathRecord {
  transitions: string[];
  /**
   * `refused`: the run did not start; `timed-out`: it had not ended when the time was up;
   * `left-path`: it took a transition the path does not, and was stopped there; `not-run`: the
   * path cannot be taken on the statechart as it is now, or cannot be driven, so it was not run.
   */
  end: PathEnd | "refused" | "timed-out" | "left-path" | "not-run";
}

export interface PathRun {
  id: string;
  ok: boolean;
  expected: PathRecord;
  actual: PathRecord;
  /** Why the path failed, when it did. */
  reason?: string;
  /** The graph transitions the real run took (`coverage` keys). */
  covered: string[];
  /** The graph transitions the model took along the path. */
  modelled: string[];
}

export interface RunPathOptions {
  /** The run's ctx; by default one generated from the pipeline's `context` schema. */
  ctx?: Record<string, unknown>;
  /** Give up on a run that has not ended after this long (default 60 s). */
  timeoutMs?: number;
  /** What code and command stages end with instead of running, by stage id. */
  fixtures?: Fixtures;
}

/**
 * Drives the real compiled pipeline down one path, in memory: a scripted model per stage
 * execution synthesized from the path's outcomes, gate answers, grant requests left to suspend,
 * real Ajv, approval order and audit. Compares what each stage execution ended with, and the
 * run's `SMTransition`s and end, with the path; a run that leaves the path is stopped there.
 */
export async function runPath(
  pipeline: PipelineDefinition,
  path: Pick<PipelinePath, "steps" | "end"> & { id?: string },
  options: RunPathOptions = {},
): Promise<PathRun> {
  const id = path.id ?? "path";
  const ctx = options.ctx ?? sampleContext(pipeline);
  const outcomes = outcomeFinder(pipeline);
  const model = modelTrace(pipeline, ctx, path.steps, outcomes);
  const expected: PathRecord = { transitions: model.transitions, end: path.end };
  const fixtures = options.fixtures ?? {};
  const drive = driveFor(
    pipeline,
    path.steps,
    outcomes,
    (index) => model.visits[index] ?? 1,
    fixtures,
    ctx,
  );
  const real =
    model.refused || drive.unrunnable
      ? { record: { transitions: [], end: "not-run" as const }, covered: [], results: new Map() }
      : await realRun(
          withStandIns(pipeline, fixtures, drive.standIns, executionKey),
          ctx,
          path.steps,
          drive,
          expected.transitions,
          options.timeoutMs ?? 60_000,
        );
  const visitOf = (index: number) => model.visits[index] ?? 1;
  const mismatch = (unended?: boolean) =>
    stepMismatch(path.steps, outcomes, visitOf, real.results, unended);
  const endsOtherwise =
    model.end !== undefined && model.end !== path.end
      ? `the pipeline now ends this path ${model.end}, not ${path.end}`
      : undefined;
  const early = model.refused ?? endsOtherwise;
  const ended = early === undefined ? mismatch() : undefined;
  const otherwise = early ?? ended?.reason ?? differs(expected, real.record);
  const unended = otherwise === undefined ? mismatch(true) : undefined;
  const reason = otherwise ?? unended?.reason;
  // A path the drive cannot force: why (for the step that went otherwise, when the drive does
  // not force that one), then (unless it was not run at all) what the run did.
  const step = (ended ?? unended)?.step;
  const why = (step !== undefined && drive.notes.get(step)) || drive.notDriven;
  const notDriven =
    why && !model.refused && `not driven: ${why}${drive.unrunnable ? "" : `; ${reason}`}`;
  return {
    id,
    ok: reason === undefined,
    expected,
    actual: real.record,
    ...(reason !== undefined && { reason: notDriven || reason }),
    covered: real.covered,
    modelled: model.covered,
  };
}

function differs(expected: PathRecord, actual: PathRecord): string | undefined {
  const at = expected.transitions.findIndex((t, i) => actual.transitions[i] !== t);
  const transitions =
    at >= 0
      ? `transition ${at + 1}: expected ${expected.transitions[at]}, got ${actual.transitions[at] ?? "nothing"}`
      : actual.transitions.length > expected.transitions.length
        ? `the run went on: ${actual.transitions[expected.transitions.length]}`
        : undefined;
  if (actual.end === "left-path") return `the run left the path: ${transitions}`;
  if (actual.end !== expected.end) return `the run ended ${actual.end}, the path ${expected.end}`;
  return transitions;
}

export type OutcomeFinder = (step: PathStep) => StageOutcome | undefined;

/** A stage outcome by the name a path step gives it, each stage's outcomes worked out once. */
export function outcomeFinder(pipeline: PipelineDefinition): OutcomeFinder {
  const cache = new Map<string, StageOutcome[]>();
  return ({ stage: step, outcome }) => {
    // A map group's item (`review-file[0]`) has its stage's outcomes.
    const stage = stageOfSibling(step);
    if (!(stage in pipeline.stages)) return undefined;
    if (!cache.has(stage)) cache.set(stage, stageOutcomes(pipeline, stage).outcomes);
    return cache.get(stage)?.find((o) => o.name === outcome);
  };
}

/** The path replayed on the model: its transitions, graph edges, end — or the step it cannot take now. */
export function modelTrace(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  steps: readonly PathStep[],
  outcomeOf: OutcomeFinder,
): {
  transitions: string[];
  covered: string[];
  /** The visit of its stage each step is. */
  visits: number[];
  end?: PathEnd;
  refused?: string;
} {
  const transitions: string[] = [];
  const visits: number[] = [];
  const covered = new Set<string>();
  const actor = createActor(
    modelMachine(pipeline, (event) => {
      const text = describeTransition(event);
      if (text && event.payload.pipelineId === pipeline.id) transitions.push(text);
    }),
    { input: { runId: "model", ctx }, inspect: edgeRecorder(covered) },
  ).start();
  try {
    for (const [index, step] of steps.entries()) {
      const control = controlEventOf(step.outcome);
      const outcome = outcomeOf(step);
      const where = `step ${index + 1} (${step.stage}: ${step.outcome})`;
      if (!outcome && !control)
        return {
          transitions,
          covered: [...covered],
          visits,
          refused: `${where}: no such outcome now`,
        };
      if (!activeStages(actor.getSnapshot()).includes(step.stage))
        return {
          transitions,
          covered: [...covered],
          visits,
          refused: `${where}: ${step.stage} does not run then`,
        };
      visits.push(lookup<number>(actor.getSnapshot().context.visits, step.stage) ?? 1);
      if (outcome?.suspends)
        return { transitions, covered: [...covered], visits, end: "suspended" };
      actor.send((control ?? stageDone(step.stage, resultFor(outcome as StageOutcome))) as never);
    }
    const { value } = actor.getSnapshot();
    return { transitions, covered: [...covered], visits, ...(isEnd(value) && { end: value }) };
  } finally {
    actor.stop();
  }
}

/** Records the root machine's transitions as graph edge keys (see `coverage.ts`). */
export function edgeRecorder(covered: Set<string>) {
  return (event: InspectionEvent) => {
    if (event.type !== "@xstate.microstep" || event.actorRef.sessionId !== event.rootId) return;
    for (const transition of event._transitions) {
      // A transition without a target (a group's sibling settling) is drawn back to its source.
      for (const target of transition.target ?? [transition.source])
        covered.add(
          edgeKey(transition.source.id, target.id, transition.eventType, transition.description),
        );
    }
  };
}

async function realRun(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  steps: readonly PathStep[],
  drive: Drive,
  /** The transitions the path's steps produce: the run is stopped once it takes another. */
  expected: readonly string[],
  timeoutMs: number,
): Promise<{ record: PathRecord; covered: string[]; results: Map<string, StageResult> }> {
  const root = mkdtempSync(join(tmpdir(), "stagechart-test-"));
  const audit = new MemoryAuditLog();
  const subPipelines = Object.values(pipeline.stages).flatMap((s) =>
    s.kind === "pipeline" ? [s.id] : [],
  );
  const exits = new ExitCounter(steps, new Set(subPipelines));
  audit.subscribe((event) => exits.observe(event));
  const covered = new Set<string>();
  const results = new Map<string, StageResult>();
  // The handle exists once the run has started; a control step is sent only after that.
  let handle: RunHandle | undefined;
  // A run off the path would wait for steps that never come: it is stopped once it leaves it.
  let left = false;
  let taken = 0;
  audit.subscribe((event) => {
    const text = event.payload.pipelineId === pipeline.id ? describeTransition(event) : undefined;
    if (text === undefined || left) return;
    if (text !== expected[taken++]) {
      left = true;
      // Not from inside the transition that recorded it.
      queueMicrotask(() => handle?.stop());
    }
  });
  const host: Host = createHost({
    model: drivenModel(drive, pipeline.id, exits, (event) => handle?.send(event)),
    audit,
    root,
    // Only a path's grant-suspended step asks for a grant; the run then waits for an answer.
    unansweredGrants: "suspend",
    hooks: exitStubs(pipeline, drive, gateHooks(pipeline, drive)),
    interactors: [answersOf(drive)],
    // Backoff waits are deadlines on the host's clock: one that leaps a day a reading skips them.
    clock: leapingClock(),
    sandbox: { mode: "off" },
  });
  try {
    const started = await startRun(pipeline, {
      host,
      ctx,
      runId: "path",
      inspect: { next: both(edgeRecorder(covered), resultRecorder(results)) },
    });
    if (!started.ok) return { record: { transitions: [], end: "refused" }, covered: [], results };
    const run = started.value;
    handle = run;
    if (left) run.stop();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      run.stop();
    }, timeoutMs);
    const result = await run.result.finally(() => clearTimeout(timer));
    // Stopped, a run is suspended; one that had already ended keeps its end.
    const stopped = result.status === "suspended";
    return {
      record: {
        transitions: transitionsOf(audit.events, pipeline.id),
        end: timedOut ? "timed-out" : left && stopped ? "left-path" : result.status,
      },
      covered: [...covered],
      results,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const both =
  (...observers: ((event: InspectionEvent) => void)[]) =>
  (event: InspectionEvent) => {
    for (const observe of observers) observe(event);
  };

function transitionsOf(events: readonly AuditEvent[], pipelineId: string): string[] {
  return events.flatMap((event) => {
    const text = event.payload.pipelineId === pipelineId ? describeTransition(event) : undefined;
    return text ? [text] : [];
  });
}

/** A person who answers ask stages as the path says, visit by visit, and nothing else. */
function answersOf(drive: Drive): Interactor {
  return {
    name: "path",
    askValue: async ({ stageId, stageExecutionId }) => {
      const value = drive.inputs.get(executionKey(stageExecutionId));
      if (value === undefined) throw new Error(`the path leaves ${stageId} unanswered`);
      return value;
    },
  };
}

/** The hooks of the pipeline and its sub-pipelines with each gate replaced by the path's answers, visit by visit. */
function gateHooks(pipeline: PipelineDefinition, drive: Drive): Host["hooks"] {
  return Object.fromEntries(
    Object.entries(hooksWithin(pipeline)).flatMap(([stage, hooks]) =>
      hooks?.gate
        ? [
            [
              stage,
              {
                ...hooks,
                gate: ({ ctx }: { ctx: { stageExecutionId?: unknown } }) =>
                  drive.gates.get(executionKey(String(ctx.stageExecutionId))) ?? "proceed",
              },
            ],
          ]
        : [],
    ),
  );
}

/**
 * The hooks of each LLM stage (a sub-pipeline's too) whose exit hook the drive stubs: Exit hands
 * on what the real Exit does, fitted to the path's split, or where it cannot the path's output,
 * visit by visit (see `StandIn`); the Assert, which checks what the real Exit would read, is
 * left out.
 */
function exitStubs(
  pipeline: PipelineDefinition,
  drive: Drive,
  /** The hooks so far (the gates already replaced). */
  base: Host["hooks"],
): Host["hooks"] {
  const stubbed = stagesStoodIn(drive.standIns);
  const llmStages = llmStagesWithin(pipeline);
  const replaced = Object.entries(hooksWithin(pipeline)).flatMap(([stage, own]) => {
    const hooks = base[stage] ?? own;
    if (!hooks?.exit || !stubbed.has(stage) || !llmStages.has(stage)) return [];
    const { assert: _checksWhatExitReads, ...kept } = hooks;
    const exit: typeof hooks.exit = async (input) => {
      const standIn = drive.standIns.get(executionKey(String(input.ctx.stageExecutionId)));
      if (!standIn) return hooks.exit?.(input);
      const fitted = standIn.fits && (await fittedOutput(standIn.fits, () => hooks.exit?.(input)));
      return fitted ?? standIn.outcome.output;
    };
    return [[stage, { ...kept, exit }]];
  });
  return { ...base, ...Object.fromEntries(replaced) };
}

/** The ids of the LLM stages of the pipeline and its sub-pipelines. */
function llmStagesWithin(pipeline: PipelineDefinition): Set<string> {
  return new Set(
    Object.values(pipeline.stages).flatMap((stage) =>
      stage.kind === "llm"
        ? [stage.id]
        : stage.kind === "pipeline"
          ? [...llmStagesWithin(stage.pipeline)]
          : [],
    ),
  );
}

/** Every stage's hooks, a sub-pipeline's included, by stage id (as a run collects them: the outer pipeline's win). */
function hooksWithin(pipeline: PipelineDefinition): PipelineDefinition["hooks"] {
  const nested = Object.values(pipeline.stages).flatMap((stage) =>
    stage.kind === "pipeline" ? Object.entries(hooksWithin(stage.pipeline)) : [],
  );
  return { ...Object.fromEntries(nested), ...pipeline.hooks };
}

function leapingClock(): { now(): number } {
  let now = Date.now();
  return {
    now: () => {
      now += 86_400_000;
      return now;
    },
  };
}
