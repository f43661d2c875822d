import type { JsonValue } from "../tools/types.js";
import { withOverrideNote } from "./stage-entries.js";
import type { AssertInput, SetupInput, SetupOutput, StageServices } from "./stage-services-port.js";
import type { AssertOutcome, GateAnswer } from "./stage-types.js";

/**
 * The stage's phases before and after Act, each run of them one actor: XState builds, starts
 * and stops an actor per invocation, and a stage used to invoke five (Setup, Init, CheckGate,
 * Assert, Exit). A phase that throws ends the run of them there, and what the earlier phases
 * gave is kept, so the machine audits each phase as it did when each had its own actor.
 */

export interface EnterInput extends SetupInput {
  /** What Setup gave, when a stored stage had passed it already (a snapshot from before). */
  setUp?: SetupOutput;
}

/** What Setup, Init and CheckGate gave, up to the first that threw. */
export interface StageEntry {
  /** Setup's output, unless the stage was set up already. */
  setup?: SetupOutput;
  /** Init's system prompt. */
  prompt?: string;
  gate?: GateAnswer;
  /**
   * The phase that threw: Setup and Init fail the stage as `StageInitFailed`, CheckGate as
   * itself.
   */
  failed?: { phase: "init" | "gate"; error: unknown };
  /**
   * When Setup and Init ended (`services.now()`): they are audited once CheckGate has answered,
   * each at its own moment, as when each phase was a step of its own.
   */
  endedAt: { setup?: number; init?: number };
}

/** Setup → Init → CheckGate. */
export async function enterStage(services: StageServices, input: EnterInput): Promise<StageEntry> {
  const entry: StageEntry = { endedAt: {} };
  let setUp = input.setUp;
  try {
    if (!setUp) {
      setUp = await services.setup(input);
      entry.setup = setUp;
      entry.endedAt.setup = services.now();
    }
    const { stageContext } = setUp;
    const body = await services.init({ stage: input.stage, stageContext });
    entry.prompt = withOverrideNote(input.stage, stageContext.override, body);
    entry.endedAt.init = services.now();
  } catch (error) {
    entry.failed = { phase: "init", error };
    return entry;
  }
  try {
    entry.gate = await services.checkGate({
      stage: input.stage,
      stageContext: setUp.stageContext,
    });
  } catch (error) {
    entry.failed = { phase: "gate", error };
  }
  return entry;
}

export interface FinishInput extends AssertInput {
  /** The completion fields Exit hands on as output (all of parsed when absent). */
  outputFields?: readonly string[];
  /** Assert's verdict, when a stored stage had it already (a snapshot from before). */
  decided?: AssertOutcome;
}

/** What Assert and Exit gave, up to the first that threw. */
export interface StageFinish {
  /** The verdict the stage goes on with; absent when Assert threw. */
  outcome?: AssertOutcome;
  /** Whether Assert answered in this run (not decided before a restore): it is audited then. */
  asserted: boolean;
  /** What Exit handed on, when the verdict was `ok` or `skip` and Exit ran. */
  exited?: { output: JsonValue | undefined };
  failed?: { error: unknown };
}

/** Assert → Exit (Exit only after `ok` or `skip`). */
export async function finishStage(
  services: StageServices,
  input: FinishInput,
): Promise<StageFinish> {
  const { decided, outputFields, ...asserted } = input;
  const finish: StageFinish = { asserted: decided === undefined };
  try {
    const outcome = decided ?? (await services.assert(asserted));
    finish.outcome = outcome;
    if (outcome.verdict !== "ok" && outcome.verdict !== "skip") return finish;
    const output = await services.exit({
      ...asserted,
      verdict: outcome.verdict,
      ...(outcome.reason !== undefined && { reason: outcome.reason }),
      ...(outputFields !== undefined && { outputFields }),
    });
    finish.exited = { output };
  } catch (error) {
    finish.failed = { error };
  }
  return finish;
}
