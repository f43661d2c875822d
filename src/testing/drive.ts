import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { createActor } from "xstate";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { stageOfSibling } from "../compiler/pipeline-parallel.js";
import { lookup } from "../compiler/stage-table.js";
import type { JsonValue } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { AuditEvent } from "../events/audit.js";
import type { ScriptEntry } from "../models/script-schema.js";
import { createScriptedModel } from "../models/scripted.js";
import type { ModelHandle, StagechartCallInfo } from "../models/types.js";
import { controlEventOf, stageDone } from "./events.js";
import { modelMachine } from "./model.js";
import { resultFor, type StageOutcome, type SubPipelineEnding, stageOutcomes } from "./outcomes.js";
import { type PathStep, pipelinePaths } from "./paths.js";
import { brokenPayload } from "./payloads.js";
import { byOutcome, type Fixtures, fixturesWithin, type StandIn, standInOf } from "./stand-ins.js";

/** What drives a real run down one path: a script per stage execution, gate answers, the order of steps. */
export interface Drive {
  /** Entries by `<stage>@<visit>`. */
  script: Map<string, ScriptEntry[]>;
  /** The step each stage execution stands for, by `<stage>@<visit>`. */
  stepOf: Map<string, number>;
  /** The control event a path sends while a stage execution runs, and its step, by `<stage>@<visit>`. */
  controls: Map<string, { step: number; event: PipelineEvent }>;
  /** The gate's answer, by `<stage>@<visit>`, for stages with a gate. */
  gates: Map<string, "proceed" | "defer" | "block">;
  /** What a person answers an ask stage, by `<stage>@<visit>`; none: nobody answers. */
  inputs: Map<string, JsonValue>;
  /**
   * What stands in for a stage execution's code, by `<stage>@<visit>` (a sub-pipeline's stage,
   * `<stage>@<visit>/<inner stage>@<visit>`): its fixture, or the code computing the output its
   * rules read, an LLM stage's exit hook or a code or command stage's (see `standInOf`).
   */
  standIns: Map<string, StandIn>;
  /** Why the path cannot be driven by a script, when it cannot: the first step's why. */
  notDriven?: string;
  /** Why each step that a script, stand-in or answer does not force is not, by step index. */
  notes: Map<number, string>;
  /** A fixture ends otherwise than the path: the run would leave the path, so it is not started. */
  unrunnable?: boolean;
}

const entry = (reply: ScriptEntry["reply"]): ScriptEntry => ({ reply, delayMs: 0, usage: {} });
const call = (tool: string, args: Record<string, unknown>) =>
  entry({ kind: "tool-calls", calls: [{ tool, args }] });

/** The model replies that make one stage execution end with `outcome`. */
export function repliesFor(pipeline: PipelineDefinition, outcome: StageOutcome): ScriptEntry[] {
  const stage = pipeline.stages[outcome.stage];
  if (stage?.kind !== "llm") return [];
  const { completionTool, completionSchema } = stage.definition;
  const { drive } = outcome;
  switch (drive.kind) {
    case "complete":
      // A refusal the model reads as the call's result (a two-step confirmation) is answered by
      // calling again with the same payload; a completion taken the first time leaves it unused.
      return pipeline.hooks[outcome.stage]?.refuseCompletion
        ? [call(completionTool, drive.payload), call(completionTool, drive.payload)]
        : [call(completionTool, drive.payload)];
    case "cap-hit":
      // Each attempt: a payload the schema refuses (a parse failure), then prose till turnCap.
      return Array.from({ length: drive.attempts }, () => [
        call(completionTool, brokenPayload(completionSchema)),
        ...Array.from({ length: drive.turnCap - 1 }, () =>
          entry({ kind: "text", text: "Still thinking about it." }),
        ),
      ]).flat();
    case "grant-suspended":
      return [call(drive.probe.tool, drive.probe.args)];
    case "timed-out":
      return drive.probe ? [call(drive.probe.tool, drive.probe.args)] : [];
    case "budget-exceeded":
      // One reply spends the budget's tokens; the call after it is not made.
      return drive.usage
        ? [{ ...entry({ kind: "text", text: "Still thinking about it." }), usage: drive.usage }]
        : [];
    default:
      return [];
  }
}

/**
 * Why a wait with a deadline is not driven to suspend: a path's run reads a clock that leaps past
 * every deadline (as past every backoff), so the wait times out where a real one suspends first.
 */
const suspendsBeforeDeadline = (stage: string) =>
  `${stage} suspends only until its wait's deadline, which the drive's clock passes at once (its timed-out outcome is driven)`;

/** The scripts, step order, control events and gate answers for a path, from the outcomes its steps name. */
export function driveFor(
  pipeline: PipelineDefinition,
  steps: readonly PathStep[],
  outcomeOf: (step: PathStep) => StageOutcome | undefined,
  /** The visit of its stage each step is (a sibling cancelled without a step of its own counts too). */
  visitOf: (index: number) => number,
  fixtures: Fixtures = {},
  ctx: Record<string, unknown> = {},
  /** The sub-pipeline stages the pipeline is within, outermost first: a fixture's key names them. */
  within: readonly string[] = [],
): Drive {
  const drive: Drive = {
    script: new Map(),
    stepOf: new Map(),
    controls: new Map(),
    gates: new Map(),
    inputs: new Map(),
    standIns: new Map(),
    notes: new Map(),
  };
  /** Notes a step the drive does not force, and why. */
  const unforced = (index: number, why: string) => {
    drive.notDriven ??= `step ${index + 1}: ${why}`;
    if (!drive.notes.has(index)) drive.notes.set(index, `step ${index + 1}: ${why}`);
  };
  const answerGate = (key: string, stage: string, answer: "proceed" | "defer" | "block") => {
    if (pipeline.hooks[stage]?.gate) drive.gates.set(key, answer);
  };
  for (const [index, step] of steps.entries()) {
    // A map group's item (`review-file[0]`) runs its stage; its executions are the item's own.
    const stageId = stageOfSibling(step.stage);
    const kind = pipeline.stages[stageId]?.kind;
    const key = `${step.stage}@${visitOf(index)}`;
    const event = controlEventOf(step.outcome);
    if (event) {
      if (kind !== "llm") {
        unforced(
          index,
          `${step.outcome} is sent while a stage's model is called; ${step.stage} is a ${kind} stage`,
        );
        drive.unrunnable = true;
      }
      answerGate(key, stageId, "proceed");
      drive.controls.set(key, { step: index, event });
      continue;
    }
    const outcome = outcomeOf(step);
    if (!outcome) {
      unforced(index, `${step.stage} has no outcome ${step.outcome} now`);
      continue;
    }
    const stage = pipeline.stages[stageId];
    const listed = fixtures[stageId];
    // Only code and command stages run what a fixture can stand in for.
    const given = kind === "code" || kind === "command" ? listed : undefined;
    // A per-outcome fixture stands in for the visits whose outcome it names, a one-for-all one
    // for every visit; an outcome a per-outcome fixture leaves out is left to the code.
    const fixture = byOutcome(given) ? given[outcome.name] : given;
    const standIn = byOutcome(given) || !given ? standInOf(pipeline, outcome, fixture) : undefined;
    if (standIn) drive.standIns.set(key, standIn);
    const unrunnable = (why: string) => {
      unforced(index, why);
      drive.unrunnable = true;
    };
    if (stage?.kind === "pipeline") {
      const ending = outcome.drive.kind === "code" ? outcome.drive.ending : undefined;
      const inner = fixturesWithin(fixtures, stageId);
      const why = driveSubPipeline(drive, stage.pipeline, outcome.verdict, ctx, key, ending, {
        fixtures: inner,
        within: [...within, stageId],
      });
      if (why?.unrunnable) unrunnable(`${step.stage} is a pipeline stage: ${why.reason}`);
      else if (why) unforced(index, `${step.stage} is a pipeline stage: ${why.reason}`);
    } else if (kind === "ask") {
      // Nobody answering a timed-out ask: the drive's clock passes its deadline at once.
      if (outcome.drive.kind === "answer" && outcome.drive.value !== undefined)
        drive.inputs.set(key, outcome.drive.value);
      else if (outcome.suspends && stage?.kind === "ask" && stage.timeout)
        unforced(index, suspendsBeforeDeadline(step.stage));
    } else if (kind !== "llm" && !fixture && !standIn)
      unforced(
        index,
        byOutcome(given)
          ? `${step.stage}'s fixtures have no ${JSON.stringify(outcome.name)}, so its code runs`
          : `${step.stage} is a ${kind} stage whose outcome no script forces; give it a fixture${within.length > 0 ? ` (${[...within, step.stage].join("/")})` : ""}`,
      );
    else if (fixture && fixture.verdict !== outcome.verdict)
      unrunnable(`${step.stage}'s fixture ends ${fixture.verdict}, the path ${outcome.verdict}`);
    else if (outcome.drive.kind === "budget-exceeded" && !outcome.drive.usage)
      unforced(
        index,
        `${step.stage}'s budget limits only cost or time, which a script's replies do not spend; a token limit would`,
      );
    else if (outcome.drive.kind === "grant-suspended" && pipeline.grants.timeout)
      unforced(index, suspendsBeforeDeadline(step.stage));
    answerGate(key, stageId, outcome.drive.kind === "gate" ? outcome.drive.answer : "proceed");
    drive.script.set(key, repliesFor(pipeline, outcome));
    drive.stepOf.set(key, index);
  }
  return drive;
}

/**
 * Scripts a sub-pipeline's own stages down one of its paths that ends as the stage's verdict
 * needs (`done` for ok, `failed` for fail), or as its outcome's `ending` says, and answers its ask stages and gates as that path says, under
 * the execution of the sub-pipeline stage they run in (`<stage>@<visit>/<inner stage>@<inner
 * visit>`, see `executionKey`), so each visit of it is driven afresh; they do not wait for the
 * outer path's steps. Returns why it cannot, `unrunnable` when no run could take the path (rather
 * than the sub-path's real code deciding).
 */
function driveSubPipeline(
  drive: Drive,
  sub: PipelineDefinition,
  verdict: string,
  ctx: Record<string, unknown>,
  execution: string,
  /** The way the sub-pipeline's run must end, when the outcome names one. */
  ending: SubPipelineEnding | undefined,
  /** The fixtures of the sub-pipeline's stages, named as within it, and the stages it is within. */
  { fixtures, within }: { fixtures: Fixtures; within: readonly string[] },
): { reason: string; unrunnable: boolean } | undefined {
  const end = ending?.end ?? (verdict === "ok" ? "done" : "failed");
  const endsSo = (steps: readonly PathStep[]) =>
    !ending || (steps.at(-1)?.stage === ending.stage && steps.at(-1)?.outcome === ending.outcome);
  const outcomeOf = (step: PathStep) =>
    stageOutcomes(sub, step.stage).outcomes.find((o) => o.name === step.outcome);
  // The first sub-path the fixtures let run (one a fixture ends otherwise is passed over).
  let inner: Drive | undefined;
  for (const path of pipelinePaths(sub, { ctx }).paths) {
    if (path.end !== end || !endsSo(path.steps)) continue;
    const visits = visitsAlong(sub, ctx, path.steps, outcomeOf);
    const visitOf = (index: number) => visits[index] ?? 1;
    const drive = driveFor(sub, path.steps, outcomeOf, visitOf, fixtures, ctx, within);
    inner ??= drive;
    if (!drive.unrunnable) {
      inner = drive;
      break;
    }
  }
  if (!inner)
    return {
      reason: `no path of ${sub.id} ends ${end}${ending ? ` after ${ending.stage}: ${ending.outcome}` : ""}`,
      unrunnable: true,
    };
  if (inner.unrunnable) return { reason: inner.notDriven ?? "", unrunnable: true };
  for (const [key, entries] of inner.script) drive.script.set(`${execution}/${key}`, entries);
  for (const [key, value] of inner.inputs) drive.inputs.set(`${execution}/${key}`, value);
  for (const [key, answer] of inner.gates) drive.gates.set(`${execution}/${key}`, answer);
  for (const [key, standIn] of inner.standIns) drive.standIns.set(`${execution}/${key}`, standIn);
  return inner.notDriven === undefined ? undefined : { reason: inner.notDriven, unrunnable: false };
}

/**
 * The visit of its stage each step of a path is, as the statechart counts them when the path
 * is replayed on the pipeline's model (so a sibling cancelled without a step of its own counts).
 */
function visitsAlong(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
  steps: readonly PathStep[],
  outcomeOf: (step: PathStep) => StageOutcome | undefined,
): number[] {
  const actor = createActor(modelMachine(pipeline), { input: { runId: "model", ctx } }).start();
  try {
    return steps.map((step) => {
      const visit = lookup<number>(actor.getSnapshot().context.visits, step.stage) ?? 1;
      const outcome = outcomeOf(step);
      const event =
        controlEventOf(step.outcome) ?? (outcome && stageDone(step.stage, resultFor(outcome)));
      if (event) actor.send(event as never);
      return visit;
    });
  } finally {
    actor.stop();
  }
}

/**
 * A stage execution's script key, from its id: `path/plan/2` → `plan@2`; a sub-pipeline's stage,
 * `path/inner/2/review/1` → `inner@2/review@1` (the run id, first, is left out).
 */
export function executionKey(stageExecutionId: string): string {
  const segments = stageExecutionId.split("/").slice(1);
  const pairs: string[] = [];
  for (let i = 0; i + 1 < segments.length; i += 2) pairs.push(`${segments[i]}@${segments[i + 1]}`);
  return pairs.join("/");
}

/** The stage (or map group's item) an execution key's innermost execution runs: `review-file[0]`. */
const stageOfKey = (key: string): string => key.split("/").at(-1)?.split("@")[0] ?? key;

/**
 * The scripted model over a drive's scripts, answering each stage execution from its own script
 * and only once every earlier step of the path has settled, so parallel siblings settle in the
 * path's order. An execution the path does not settle waits until it is cancelled.
 */
export function drivenModel(
  drive: Drive,
  pipelineId: string,
  exits: ExitCounter,
  sendControl: (event: PipelineEvent) => void,
): ModelHandle {
  // Keyed by stage execution (`plan@1`), not by stage: no pipeline check of the keys.
  const { checkPipeline: _keyedByExecution, ...scripted } = createScriptedModel({
    file: `${pipelineId}.paths`,
    stages: drive.script,
  });
  const calls = new Map<string, number>();
  const inner = scripted.model;
  const answer = (key: string, options: LanguageModelV3CallOptions, info: StagechartCallInfo) => {
    const position = calls.get(key) ?? 0;
    calls.set(key, position + 1);
    const { pipelineId: _ignored, ...rest } = info;
    return inner.doGenerate({
      ...options,
      providerOptions: { stagechart: { ...rest, stageId: key, position } },
    });
  };
  return {
    ...scripted,
    model: {
      ...inner,
      doGenerate: async (options: LanguageModelV3CallOptions) => {
        const info = options.providerOptions?.stagechart as unknown as StagechartCallInfo;
        const key = executionKey(info.stageExecutionId);
        // A sub-pipeline's stages answer from their own scripts, in their own order.
        if (info.pipelineId !== pipelineId) return answer(key, options, info);
        const control = drive.controls.get(key);
        if (control) {
          await exits.settledBefore(control.step, options.abortSignal);
          exits.sent(stageOfKey(key));
          sendControl(control.event);
          await exits.settledBefore(undefined, options.abortSignal);
        }
        const step = drive.stepOf.get(key);
        await exits.settledBefore(step, options.abortSignal);
        return answer(key, options, info);
      },
    },
  };
}

/** Counts `StageExited` (and control events sent) per stage, so a stage execution can wait for the steps before its own. */
export class ExitCounter {
  private readonly exits = new Map<string, number>();
  private readonly waiting = new Set<() => void>();

  /** `unobserved`: stages whose end no `StageExited` reports (sub-pipeline stages); no step waits for them. */
  constructor(
    private readonly steps: readonly PathStep[],
    private readonly unobserved: ReadonlySet<string> = new Set(),
  ) {}

  /** By the stage execution's own stage: a map group's item (`review-file[0]`), not its stage. */
  observe(event: AuditEvent): void {
    if (event.type !== "StageExited" || event.stageId === undefined) return;
    const { stageExecutionId } = event;
    this.count(stageExecutionId ? stageOfKey(executionKey(stageExecutionId)) : event.stageId);
  }

  /** A control event sent from a stage execution ends its step (the event cancels the stage). */
  sent(stageId: string): void {
    this.count(stageId);
  }

  private count(stageId: string): void {
    this.exits.set(stageId, (this.exits.get(stageId) ?? 0) + 1);
    for (const wake of [...this.waiting]) wake();
  }

  /** Resolves once every step before `step` has settled; never, for no step, until aborted. */
  settledBefore(step: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const check = () => {
        if (step === undefined || !this.settled(step)) return;
        this.waiting.delete(check);
        resolve();
      };
      signal?.addEventListener("abort", () => {
        this.waiting.delete(check);
        reject(signal.reason);
      });
      this.waiting.add(check);
      check();
    });
  }

  private settled(step: number): boolean {
    const needed = new Map<string, number>();
    for (const { stage } of this.steps.slice(0, step))
      if (!this.unobserved.has(stageOfSibling(stage)))
        needed.set(stage, (needed.get(stage) ?? 0) + 1);
    return [...needed].every(([stage, n]) => (this.exits.get(stage) ?? 0) >= n);
  }
}
