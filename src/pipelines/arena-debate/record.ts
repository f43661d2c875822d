import type { JsonValue, StageContext, StageHooks } from "../../definitions/contract.js";
import type { Argument, Rating, Role, Tally } from "./consensus.js";

/**
 * The debate record: what each stage of the debate hands the next (`output`), growing as it goes,
 * so every round sees the request, the memory context, the plan and every earlier argument.
 */

/** A command of the plan, and the command that undoes it. */
export interface PlanTask {
  name: string;
  run: string;
  rollback?: string;
}

export interface PastDebate {
  traceId: string;
  task: string;
  decision: string;
  consensus: number;
  /** How alike its task and this one are (cosine of word counts), for the similar ones. */
  similarity?: number;
}

export interface DebateRecord {
  traceId: string;
  task: string;
  memory: { recent: PastDebate[]; similar: PastDebate[]; ratings: Record<Role, Rating> };
  classification?: JsonValue;
  plan?: { summary: string; tasks: PlanTask[] };
  arguments: Argument[];
  /** The tally after each pass, then the final one. */
  tallies: Tally[];
  ruling?: { decision: "PROCEED" | "REJECT"; reason: string; consensus: number };
  /** Each stage's line of the trace, in order. */
  steps: { stage: string; note: string }[];
}

/** The record the stage before handed on; a stage placed after another stage always has one. */
export function recordOf(ctx: StageContext): DebateRecord {
  const output = ctx.upstream[0]?.output as DebateRecord | undefined;
  if (!output || typeof output !== "object" || !Array.isArray(output.arguments))
    throw new Error("the stage before handed on no debate record");
  return output;
}

/** The record with one more line of trace. */
export const noted = (record: DebateRecord, stage: string, note: string): DebateRecord => ({
  ...record,
  steps: [...record.steps, { stage, note }],
});

/** A record (or anything built of JSON) as what a stage hands on. */
export const asJson = (value: object): JsonValue => value as unknown as JsonValue;

/** Debate passes that have run to the end: the Optimizer closes each. */
export const passesOf = (record: DebateRecord): number =>
  record.arguments.filter((arg) => arg.role === "optimizer").length;

interface Completion {
  stance: Argument["stance"];
  confidence: number;
  argument: string;
  tasks?: PlanTask[];
}

/** The Exit of a debate round: the record with the role's argument (and Solution's revised plan). */
export function round(role: Role): StageHooks {
  return {
    exit: ({ ctx, parsed }) => {
      const record = recordOf(ctx);
      const { stance, confidence, argument, tasks } = parsed as Completion;
      const arg: Argument = { role, pass: passesOf(record) + 1, stance, confidence, argument };
      const plan = tasks && record.plan ? { ...record.plan, tasks } : record.plan;
      return asJson(
        noted(
          { ...record, arguments: [...record.arguments, arg], ...(plan && { plan }) },
          role,
          `pass ${arg.pass}: ${stance} (${confidence})${tasks ? ", plan revised" : ""}`,
        ),
      );
    },
  };
}

/** The Exit of a stage whose completion becomes one field of the record. */
export function into(
  field: "classification" | "plan",
  note: (parsed: never) => string,
): StageHooks {
  return {
    exit: ({ ctx, parsed, stage }) =>
      asJson(
        noted({ ...recordOf(ctx), [field]: parsed as JsonValue }, stage.id, note(parsed as never)),
      ),
  };
}
