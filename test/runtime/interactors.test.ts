import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { GrantRequest } from "../../src/compiler/stage-types.js";
import {
  askInteractors,
  callbackInteractor,
  terminalInteractor,
} from "../../src/runtime/interactors.js";

const request: GrantRequest = {
  stageId: "plan",
  stageExecutionId: "r/plan/1",
  attempt: 1,
  proposalId: "r/plan/1/a1/t1/c0",
  tool: "Edit",
  argsDigest: "d",
  argsSummary: "src/auth.ts",
  envelope: ["Read", "Grep", "Glob"],
};

describe("interactors", () => {
  it("the first answer wins and the others are dismissed", async () => {
    let dismissed = false;
    const slow = callbackInteractor(
      "slow",
      (_, signal) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve("approve"), 5_000);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            dismissed = true;
          });
        }),
    );
    const fast = callbackInteractor("fast", () => "deny");
    await expect(askInteractors([slow, fast], request, new AbortController().signal)).resolves.toBe(
      "deny",
    );
    expect(dismissed).toBe(true);
  });

  it("one failing interactor does not stop another from answering", async () => {
    const broken = callbackInteractor("broken", () => {
      throw new Error("UI crashed");
    });
    const fine = callbackInteractor("fine", () => "approve");
    await expect(
      askInteractors([broken, fine], request, new AbortController().signal),
    ).resolves.toBe("approve");
  });

  /** Asks `request` on a terminal where `typed` is typed: the answer, and what the terminal showed. */
  async function askOnTerminal(asked: GrantRequest, typed: string) {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (chunk) => {
      shown += String(chunk);
    });
    const answer = terminalInteractor({ input, output }).requestGrant(
      asked,
      new AbortController().signal,
    );
    input.write(typed);
    return { answer: await answer, shown };
  }

  it("the terminal prompt explains first (the stage, the tool and its arguments, why it asks), then asks, and takes y/yes", async () => {
    for (const [typed, expected] of [
      ["y\n", "approve"],
      ["YES\n", "approve"],
      ["n\n", "deny"],
      ["\n", "deny"],
      ["maybe\n", "deny"],
    ] as const) {
      expect(await askOnTerminal(request, typed)).toEqual({
        answer: expected,
        shown:
          "plan asks for Edit(src/auth.ts): Edit is not among its tools (Read, Grep, Glob).\nAllow this call once? [y/N] ",
      });
    }
  });

  it("the terminal prompt says why when the stage may call no tools, or is a code stage (no envelope)", async () => {
    const none = await askOnTerminal({ ...request, envelope: [] }, "n\n");
    expect(none.shown.split("\n")[0]).toBe(
      "plan asks for Edit(src/auth.ts): it may call no tools.",
    );
    const { envelope: _, ...fromCode } = request;
    const code = await askOnTerminal({ ...fromCode, tool: "Bash", argsSummary: "npm test" }, "n\n");
    expect(code.shown.split("\n")[0]).toBe(
      "plan asks for Bash(npm test): a code or command stage has no tools of its own, and the security mode asks for each call.",
    );
  });

  it("the terminal prompt stops waiting when the stage is cancelled", async () => {
    const controller = new AbortController();
    const answer = terminalInteractor({
      input: new PassThrough(),
      output: new PassThrough(),
    }).requestGrant(request, controller.signal);
    controller.abort();
    await expect(answer).rejects.toThrow();
  });
});

describe("the terminal asking an ask stage's question", () => {
  const question = {
    runId: "r",
    stageId: "decide",
    stageExecutionId: "r/decide/1",
    prompt: "Accept the change?",
    schema: { type: "object" },
  };

  async function answerOnTerminal(typed: string, problems?: string[]) {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (chunk) => {
      shown += String(chunk);
    });
    const answer = terminalInteractor({ input, output }).askValue(
      { ...question, ...(problems && { problems }) },
      new AbortController().signal,
    );
    input.write(typed);
    return { answer: await answer, shown };
  }

  it("shows the stage and its prompt, and takes JSON", async () => {
    const { answer, shown } = await answerOnTerminal('{"decision":"accepted"}\n');
    expect(answer).toEqual({ decision: "accepted" });
    expect(shown).toBe(
      "decide asks: Accept the change?\nAnswer (JSON, or plain text for a string): ",
    );
  });

  it("takes text that is not JSON as a string, and says why an earlier answer was refused", async () => {
    const { answer, shown } = await answerOnTerminal("  ship it \n", ["(root) must be object"]);
    expect(answer).toBe("ship it");
    expect(shown.startsWith("Not a valid answer: (root) must be object\ndecide asks:")).toBe(true);
  });
});
