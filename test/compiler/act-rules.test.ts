import { createHash } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { describe, expect, it } from "vitest";
import { argsDigest, classifyTurn, type ModelReply } from "../../src/compiler/act-rules.js";
import type { TurnOutcome } from "../../src/compiler/stage-types.js";
import { parseStageDefinition, type StageDefinition } from "../../src/definitions/index.js";
import { seedPlan } from "../support/stages.js";

function planStage(): StageDefinition {
  const result = parseStageDefinition(seedPlan, "plan.md");
  if (!result.ok) throw new Error("the seed plan stage loads");
  return result.value;
}

setFlagsFromString("--allow-natives-syntax");

const stage = planStage();
const identity = { stageExecutionId: "run-1/plan/1", attempt: 1, turn: 3 };
const helpers = {
  validateCompletion: (payload: unknown) =>
    typeof payload === "object" && payload !== null && "summary" in payload && "steps" in payload
      ? []
      : ["(root) must have required property 'summary'"],
  summarize: (tool: string, args: unknown) =>
    tool === "Grep" ? String((args as { pattern: string }).pattern) : "…",
  refuseCompletion: () => undefined,
};

const reply = (calls: [string, unknown][], text = ""): ModelReply => ({
  text,
  calls: calls.map(([tool, args], i) => ({
    toolCallId: `call-${i}`,
    tool,
    input: JSON.stringify(args),
  })),
  usage: { inputTokens: 10, outputTokens: 2 },
});

const plan = { summary: "Split the module", steps: ["extract", "test"] };

describe("the Act rules", () => {
  it("exactly one completion call that passes the schema ends Act with the parsed payload", () => {
    const outcome = classifyTurn(stage, reply([["submit_plan", plan]]), identity, helpers);
    expect(outcome).toMatchObject({ kind: "completion", parsed: plan, tools: ["submit_plan"] });
    expect(outcome.entries).toEqual([
      {
        role: "assistant",
        text: "",
        calls: [{ toolCallId: "call-0", tool: "submit_plan", args: plan }],
      },
      {
        role: "tool",
        toolCallId: "call-0",
        tool: "submit_plan",
        result: { accepted: true },
        isError: false,
      },
    ]);
  });

  it("a completion payload failing the schema goes back as that call's tool result", () => {
    const outcome = classifyTurn(stage, reply([["submit_plan", { steps: [] }]]), identity, helpers);
    expect(outcome).toMatchObject({
      kind: "completion-invalid",
      errors: ["(root) must have required property 'summary'"],
    });
    expect(outcome.entries[1]).toMatchObject({
      role: "tool",
      toolCallId: "call-0",
      isError: true,
      result: {
        code: "Validation/CompletionSchemaMismatch",
        context: { errors: ["(root) must have required property 'summary'"] },
      },
    });
  });

  it("a payload the stage refuses after the schema passed goes back with the refusal as its tool result", () => {
    const refusing = { ...helpers, refuseCompletion: () => "not before the tests pass" };
    const outcome = classifyTurn(stage, reply([["submit_plan", plan]]), identity, refusing);
    expect(outcome).toMatchObject({
      kind: "completion-refused",
      reason: "not before the tests pass",
    });
    expect(outcome.entries[1]).toEqual({
      role: "tool",
      toolCallId: "call-0",
      tool: "submit_plan",
      isError: true,
      result: {
        class: "Validation",
        code: "Validation/CompletionRefused",
        message: "not before the tests pass",
        context: {},
      },
    });
  });

  it("completion arguments that are not JSON are a schema failure, not a crash", () => {
    const broken: ModelReply = {
      text: "",
      calls: [{ toolCallId: "x", tool: "submit_plan", input: "{summary:" }],
      usage: {},
    };
    const outcome = classifyTurn(stage, broken, identity, helpers);
    expect(outcome.kind).toBe("completion-invalid");
    if (outcome.kind === "completion-invalid")
      expect(outcome.errors[0]).toContain("not valid JSON");
  });

  it("the completion call with other calls rejects the whole batch unexecuted, one result per call", () => {
    const outcome = classifyTurn(
      stage,
      reply([
        ["Grep", { pattern: "auth" }],
        ["submit_plan", plan],
      ]),
      identity,
      helpers,
    );
    expect(outcome.kind).toBe("batch-rejected");
    expect(outcome.entries).toHaveLength(3);
    for (const entry of outcome.entries.slice(1)) {
      expect(entry).toMatchObject({
        role: "tool",
        isError: true,
        result: { code: "Validation/CompletionNotAlone" },
      });
    }
  });

  it("two completion calls in one response are rejected the same way", () => {
    const outcome = classifyTurn(
      stage,
      reply([
        ["submit_plan", plan],
        ["submit_plan", plan],
      ]),
      identity,
      helpers,
    );
    expect(outcome.kind).toBe("batch-rejected");
  });

  it("plain text gets a steering message naming the completion tool", () => {
    const outcome = classifyTurn(
      stage,
      reply([], "I think we should refactor."),
      identity,
      helpers,
    );
    expect(outcome.kind).toBe("text");
    expect(outcome.entries[1]).toMatchObject({
      role: "user",
      text: expect.stringContaining("`submit_plan`"),
    });
  });

  it("other calls are proposed with stable ids, digests and summaries", () => {
    const outcome = classifyTurn(
      stage,
      reply([
        ["Grep", { pattern: "auth" }],
        ["Edit", { path: "a" }],
      ]),
      identity,
      helpers,
    );
    expect(outcome.kind).toBe("calls");
    if (outcome.kind !== "calls") return;
    expect(outcome.calls).toEqual([
      {
        proposalId: "run-1/plan/1/a1/t3/c0",
        toolCallId: "call-0",
        tool: "Grep",
        args: { pattern: "auth" },
        argsDigest: argsDigest({ pattern: "auth" }),
        argsSummary: "auth",
      },
      expect.objectContaining({ proposalId: "run-1/plan/1/a1/t3/c1", tool: "Edit" }),
    ]);
  });

  it("give each kind of outcome one hidden class, turn after turn: the actions reading them stay monomorphic", () => {
    const sameHiddenClass = new Function("a", "b", "return %HaveSameMap(a, b)") as (
      a: object,
      b: object,
    ) => boolean;
    // Past V8's warm-up: once optimised, a literal opening with a spread made a class per object.
    const turns = Array.from({ length: 40 }, (_, turn) =>
      classifyTurn(
        stage,
        reply([["Grep", { pattern: `p${turn}` }]]),
        { ...identity, turn },
        helpers,
      ),
    );
    const [last, before] = [turns.at(-1), turns.at(-2)] as [TurnOutcome, TurnOutcome];
    expect(last.kind).toBe("calls");
    expect(sameHiddenClass(last, before)).toBe(true);
    const call = (outcome: TurnOutcome) => (outcome.kind === "calls" ? outcome.calls[0] : {});
    expect(sameHiddenClass(call(last) as object, call(before) as object)).toBe(true);
  });
});

describe("argsDigest", () => {
  it("is the SHA-256 of key-sorted JSON, so key order does not matter", () => {
    expect(argsDigest({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: "x" } })).toBe(
      argsDigest({ a: { c: "x", d: [1, { e: 3, f: 2 }] }, b: 1 }),
    );
    expect(argsDigest({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
    expect(argsDigest({ a: 1 })).not.toBe(argsDigest({ a: 2 }));
    expect(argsDigest([1, 2])).not.toBe(argsDigest([2, 1]));
  });

  it("stays the digest stored grants and recorded cassettes were keyed with", () => {
    const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
    expect(argsDigest({ b: [1, "x"], a: null })).toBe(sha256('{"a":null,"b":[1,"x"]}'));
  });
});
