import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryStore } from "@mastra/core/storage";
import type { WorkflowRunState } from "@mastra/core/workflows";
import { afterEach, describe, expect, it } from "vitest";
import { closeLibSql, libSqlStore, mastraAgent, runMastra } from "../../bench/mastra.js";
import { LOOKUP_TOOL, lookupTool, scriptOf, type Workload } from "../../bench/workload.js";
import { type AnyTool, createScriptedModel, type ModelHandle } from "../../src/index.js";

const WORKLOAD: Workload = { stages: 3, turns: 4, outputBytes: 100 };

/** The scripted model of the workload, noting which stage and position each call asks for. */
function countedModel(asked: string[]): ModelHandle {
  const scripted = createScriptedModel(scriptOf(WORKLOAD));
  return {
    ...scripted,
    model: {
      ...scripted.model,
      doGenerate: (call: Parameters<typeof scripted.model.doGenerate>[0]) => {
        const { stageId, position } = call.providerOptions?.stagechart ?? {};
        asked.push(`${stageId}@${position}`);
        return scripted.model.doGenerate(call);
      },
    },
  };
}

/** The workload's Lookup tool, noting the key of each call it runs. */
function countedLookup(keys: string[]): AnyTool {
  const lookup = lookupTool(WORKLOAD.outputBytes);
  return {
    ...lookup,
    execute: (args: { key: string }, context: Parameters<AnyTool["execute"]>[1]) => {
      keys.push(args.key);
      return lookup.execute(args, context);
    },
  };
}

/** Mastra's in-memory store, noting how long the conversation is in each snapshot it is handed. */
class RecordingStore extends InMemoryStore {
  readonly conversationLengths: number[] = [];
  override async persistWorkflowSnapshot(args: {
    workflowName: string;
    runId: string;
    snapshot: WorkflowRunState;
  }): Promise<void> {
    const step = args.snapshot.context["model-or-tools"] as { payload?: { messages?: unknown[] } };
    const messages = step?.payload?.messages;
    if (args.snapshot.status === "running" && messages)
      this.conversationLengths.push(messages.length);
    return super.persistWorkflowSnapshot(args);
  }
}

const every = <T>(stages: number, perStage: (stage: number) => T[]): T[] =>
  Array.from({ length: stages }, (_, stage) => perStage(stage + 1)).flat();

describe("the Mastra benchmark's workflow", () => {
  it("asks the scripted model once per turn and runs Lookup on every turn but the stage's last", async () => {
    const asked: string[] = [];
    const keys: string[] = [];
    const agent = mastraAgent(
      WORKLOAD,
      countedModel(asked),
      countedLookup(keys),
      new InMemoryStore(),
    );
    const final = await runMastra(WORKLOAD, agent);
    expect(asked).toEqual(every(3, (stage) => [0, 1, 2, 3].map((turn) => `step-${stage}@${turn}`)));
    expect(keys).toEqual(every(3, (stage) => [0, 1, 2].map((turn) => `step-${stage}-${turn}`)));
    // The last stage's conversation: its prompt, then 3 Lookup calls, each with a 100-byte result.
    expect(final.messages.map((message) => message.role)).toEqual([
      "system",
      ...["assistant", "tool", "assistant", "tool", "assistant", "tool"],
    ]);
    const results = final.messages.filter((message) => message.role === "tool");
    for (const result of results)
      expect(result.content[0]).toMatchObject({
        toolName: LOOKUP_TOOL,
        output: { type: "text", value: expect.stringMatching(/^step-3-\d: .{90}$/) },
      });
  });

  it("hands its store the conversation after every step: a snapshot per model call and per tool call", async () => {
    const store = new RecordingStore();
    const agent = mastraAgent(
      WORKLOAD,
      createScriptedModel(scriptOf(WORKLOAD)),
      lookupTool(WORKLOAD.outputBytes),
      store,
    );
    await runMastra(WORKLOAD, agent);
    // The run's input (the first stage's prompt), then the state after each of the 21 steps: in
    // each stage 4 model calls and 3 tool calls, each adding a message to the stage's prompt but
    // the completion, which starts the next stage's (and, the last, adds nothing).
    const perStage = [2, 3, 4, 5, 6, 7, 1];
    expect(store.conversationLengths).toEqual([
      1,
      ...perStage,
      ...perStage,
      ...perStage.slice(0, 6),
      7,
    ]);
  });

  it("leaves a durable run's last snapshot, finished, in its LibSQL file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stagechart-mastra-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "mastra.db");
    const writer = libSqlStore(file);
    const model = createScriptedModel(scriptOf(WORKLOAD));
    await runMastra(
      WORKLOAD,
      mastraAgent(WORKLOAD, model, lookupTool(WORKLOAD.outputBytes), writer),
    );
    await closeLibSql(writer);
    const reader = libSqlStore(file);
    const { runs } = await reader.getWorkflowRuns();
    expect(runs).toHaveLength(1);
    const snapshot = runs[0]?.snapshot as WorkflowRunState;
    expect(snapshot.status).toBe("success");
    expect(snapshot.result).toMatchObject({ stage: 2, done: true });
    await closeLibSql(reader);
  });
});

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});
