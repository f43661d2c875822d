import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/events/audit.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";

setFlagsFromString("--expose-gc");
setFlagsFromString("--allow-natives-syntax");
const collectGarbage = runInNewContext("gc") as () => void;
/** Whether V8 gives two objects the same hidden class (map). */
const sameHiddenClass = new Function("a", "b", "return %HaveSameMap(a, b)") as (
  a: object,
  b: object,
) => boolean;

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

/** The scripted model, telling `onCall` of every call's prompt and tools. */
function watchedModel(
  onCall: (call: { prompt: readonly object[]; tools?: readonly object[] }) => void,
): ModelHandle {
  const parsed = parseScript(GREP_TWICE_THEN_SUBMIT, "test.script.yaml");
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  const scripted = createScriptedModel(parsed.value);
  return {
    ...scripted,
    model: {
      ...scripted.model,
      doGenerate: (options) => {
        onCall(options);
        return scripted.model.doGenerate(options);
      },
    },
  };
}

describe("a host, once a stage execution is over", () => {
  it("still has its transcript, but none of the prompts and tool lists made for its turns: they go with the stage", async () => {
    const sent: WeakRef<object>[] = [];
    const h = modelHarness(
      watchedModel(({ prompt, tools }) => {
        for (const message of prompt) sent.push(new WeakRef(message));
        if (tools) sent.push(new WeakRef(tools));
      }),
    );
    expect((await runStage(h.host, stageInput(loadStage("plan")))).verdict).toBe("ok");
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    // Three turns, each prompt repeating the earlier ones' messages (made once, then reused).
    expect(sent.length).toBeGreaterThan(9);
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

  it("keeps its audit events in objects of one hidden class per event type, not one per object", async () => {
    const h = modelHarness(watchedModel(() => {}));
    const stage = loadStage("plan");
    // Enough executions for V8's inline caches to settle first: from about the tenth object on,
    // a literal opening with the spread of a fresh object got a hidden class of its own.
    const executions = 14;
    for (let execution = 1; execution <= executions; execution++)
      await runStage(h.host, stageInput(stage, { execution }));
    const settled = h.audit.events.filter(
      (event) => Number(event.stageExecutionId?.split("/").at(-1)) > executions - 3,
    );
    const parts = (event: AuditEvent) => {
      const { usage } = event.payload as { usage?: object };
      return [event, event.payload, ...(usage ? [usage] : [])];
    };
    const byType = new Map<string, object[][]>();
    for (const event of settled)
      byType.set(event.type, [...(byType.get(event.type) ?? []), parts(event)]);
    // Three turns an execution: two tool calls, then the completion.
    expect(byType.get("ToolSucceeded")).toHaveLength(6);
    const unshared = [...byType].flatMap(([type, [first, ...rest]]) =>
      rest.flatMap((other) =>
        other.flatMap((part, i) =>
          sameHiddenClass(part, first?.[i] as object) ? [] : [`${type}, part ${i}`],
        ),
      ),
    );
    expect(unshared).toEqual([]);
  });
});
