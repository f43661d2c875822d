import { describe, expect, it } from "vitest";
import type { InputRequest } from "../../src/compiler/ask-stage.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";

const SCRIPT = `stages: {}
answers:
  accept:
    - { decision: accepted }
    - { decision: revert, reason: "it broke the callers" }
`;

function scripted(text: string) {
  const loaded = parseScript(text, "/tmp/s.script.yaml");
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return createScriptedModel(loaded.value);
}

const request = (stageId: string, visit: number): InputRequest => ({
  runId: "r1",
  stageId,
  stageExecutionId: `r1/${stageId}/${visit}`,
  prompt: "Accepted?",
  schema: { type: "object" },
});

describe("a script's answers to ask stages", () => {
  it("answer each round of the stage with the answer of that round, in a fresh process too", async () => {
    const answerer = scripted(SCRIPT).interactor;
    expect(answerer?.name).toBe("script s.script.yaml");
    const signal = new AbortController().signal;
    // Round 2 first: the answer depends on the round, not on what was asked before.
    expect(await answerer?.askValue?.(request("accept", 2), signal)).toEqual({
      decision: "revert",
      reason: "it broke the callers",
    });
    expect(await answerer?.askValue?.(request("accept", 1), signal)).toEqual({
      decision: "accepted",
    });
  });

  it("leave a stage they have no answer for, or no more, to somebody else", async () => {
    const answerer = scripted(SCRIPT).interactor;
    const signal = new AbortController().signal;
    await expect(answerer?.askValue?.(request("accept", 3), signal)).rejects.toThrow(
      "s.script.yaml has no answer for round 3 of accept",
    );
    await expect(answerer?.askValue?.(request("decide", 1), signal)).rejects.toThrow(
      "s.script.yaml has no answer for round 1 of decide",
    );
  });

  it("are absent from a script without any: its model answers nobody", () => {
    expect(scripted("stages: {}\n").interactor).toBeUndefined();
  });

  it("must be a list per stage", () => {
    const loaded = parseScript("stages: {}\nanswers:\n  accept: accepted\n", "/tmp/s.script.yaml");
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.diagnostics[0]?.message).toBe(
      "answers.accept: must be a list of answers, one per round of the stage",
    );
  });
});
