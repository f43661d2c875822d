import { describe, expect, it } from "vitest";
import type { TranscriptEntry } from "../../../src/definitions/contract.js";
import {
  CANCEL_PENDING,
  LOOP_REFUSED,
  STEP_TOOL,
  stepHooks,
} from "../../../src/definitions/pi-workflows/step-tool.js";
import type { StageDefinition } from "../../../src/definitions/stage.js";

const phaseOf = (loopable: boolean) =>
  ({ extensions: { piWorkflow: { workflow: "w", loopable } } }) as unknown as StageDefinition;

/** A workflow_step call and the result the stage gave it. */
const step = (n: number, action: string, result: Record<string, unknown>): TranscriptEntry[] => [
  {
    role: "assistant",
    text: "",
    calls: [{ toolCallId: `c${n}`, tool: STEP_TOOL, args: { action } }],
  },
  { role: "tool", toolCallId: `c${n}`, tool: STEP_TOOL, result: result as never, isError: true },
];
const refusedWith = (message: string) => ({ code: "Validation/CompletionRefused", message });

const refuse = (action: string, transcript: TranscriptEntry[], loopable = true) =>
  stepHooks.refuseCompletion?.({ stage: phaseOf(loopable), parsed: { action }, transcript });

describe("workflow_step's refusals", () => {
  it("next always passes; loop passes only in a loopable workflow", () => {
    expect(refuse("next", [])).toBeUndefined();
    expect(refuse("loop", [])).toBeUndefined();
    expect(refuse("loop", [], false)).toBe(LOOP_REFUSED);
  });

  it("a first cancel asks for confirmation; a cancel right after that refusal takes effect", () => {
    expect(refuse("cancel", [])).toBe(CANCEL_PENDING);
    expect(refuse("cancel", step(1, "cancel", refusedWith(CANCEL_PENDING)))).toBeUndefined();
  });

  it("other tools in between keep a pending cancel; another workflow_step call in between drops it", () => {
    const read: TranscriptEntry[] = [
      { role: "assistant", text: "", calls: [{ toolCallId: "r", tool: "Read", args: {} }] },
      { role: "tool", toolCallId: "r", tool: "Read", result: "text", isError: false },
    ];
    const pending = step(1, "cancel", refusedWith(CANCEL_PENDING));
    expect(refuse("cancel", [...pending, ...read])).toBeUndefined();
    const thenLoop = [...pending, ...step(2, "loop", refusedWith(LOOP_REFUSED))];
    expect(refuse("cancel", thenLoop, false)).toBe(CANCEL_PENDING);
  });
});
