import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const GREP_TWICE_THEN_SUBMIT = `
stages:
  plan:
    - tool: Grep
      args: { pattern: auth }
    - tool: Grep
      args: { pattern: token }
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`;

/** The scripted model, telling `onPrompt` of every prompt it is sent. */
function watchedModel(onPrompt: (prompt: readonly object[]) => void): ModelHandle {
  const parsed = parseScript(GREP_TWICE_THEN_SUBMIT, "test.script.yaml");
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  const scripted = createScriptedModel(parsed.value);
  return {
    ...scripted,
    model: {
      ...scripted.model,
      doGenerate: (options) => {
        onPrompt(options.prompt);
        return scripted.model.doGenerate(options);
      },
    },
  };
}

describe("a host, once a stage execution is over", () => {
  it("still has its transcript, but none of the prompts made from it: they go with the stage", async () => {
    const sent: WeakRef<object>[] = [];
    const h = modelHarness(
      watchedModel((prompt) => {
        for (const message of prompt) sent.push(new WeakRef(message));
      }),
    );
    expect((await runStage(h.host, stageInput(loadStage("plan")))).verdict).toBe("ok");
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    // Three turns, each prompt repeating the earlier ones' messages (made once, then reused).
    expect(sent.length).toBeGreaterThan(6);
    expect(sent.filter((message) => message.deref() !== undefined)).toEqual([]);
    expect(h.host.transcripts.read("run-1/plan/1").map((entry) => entry.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
      "tool",
    ]);
  });
});
