import { existsSync } from "node:fs";
import type {
  LanguageModelV3Message,
  LanguageModelV3ToolCall,
  LanguageModelV3ToolCallPart,
} from "@ai-sdk/provider";
import { Mastra } from "@mastra/core/mastra";
import type { MastraStorage } from "@mastra/core/storage";
import { createStep, createWorkflow } from "@mastra/core/workflows";
import { LibSQLStore } from "@mastra/libsql";
import { z } from "zod";
import type { AnyTool, ModelHandle } from "../src/index.js";
import { COMPLETION_TOOL, stageIdsOf, type Workload } from "./workload.js";

/** What the workflow carries from step to step, and what its storage snapshots after each one. */
interface AgentState {
  stage: number;
  turn: number;
  done: boolean;
  /** The stage's conversation, kept as the AI SDK prompt the model takes. */
  messages: LanguageModelV3Message[];
}

const agentState = z.object({
  stage: z.number(),
  turn: z.number(),
  done: z.boolean(),
  messages: z.array(z.custom<LanguageModelV3Message>()),
});

const systemPrompt = (stageId: string): LanguageModelV3Message => ({
  role: "system",
  content: `Work on the task: benchmark the engine (${stageId}).`,
});

/** The tool call the last message asks for, if the model's turn left one to run. */
function pendingCall(state: AgentState): LanguageModelV3ToolCallPart | undefined {
  const last = state.messages.at(-1);
  if (last?.role !== "assistant") return undefined;
  return last.content.find((part) => part.type === "tool-call");
}

/**
 * The same work as a stagechart run, written as a Mastra workflow: one step looped with
 * `.dountil` until the last stage completes. Each time round it does what one node of the
 * LangGraph.js graph does, one super-step: when the last message is a tool call it runs the same
 * Lookup tool and appends the result, otherwise it asks the same scripted model for the next
 * call. The conversation is the step's output, so Mastra's storage snapshots it after every step
 * (its default: a workflow persists its run after each step). A stage's completion starts the
 * next stage with a fresh message list, as a stagechart stage starts a fresh transcript.
 *
 * Model and tool are called directly, as the LangGraph graph's nodes call them: both rows measure
 * the engine and its store, not a model wrapper (Mastra 0.24's `Agent` takes AI SDK v4/v5 models,
 * `LanguageModelV1`/`V2`; the scripted model is a `LanguageModelV3`).
 */
export function mastraAgent(
  workload: Workload,
  handle: ModelHandle,
  lookup: AnyTool,
  storage: MastraStorage,
) {
  const stageIds = stageIdsOf(workload);
  const tools = [
    { type: "function" as const, name: lookup.name, inputSchema: lookup.inputSchema },
    { type: "function" as const, name: COMPLETION_TOOL, inputSchema: { type: "object" as const } },
  ];
  const model = async (state: AgentState): Promise<AgentState> => {
    const stageId = stageIds[state.stage] as string;
    const result = await handle.model.doGenerate({
      prompt: state.messages,
      tools,
      toolChoice: { type: "auto" },
      providerOptions: { stagechart: { stageId, position: state.turn } },
    });
    const call = result.content.find(
      (part): part is LanguageModelV3ToolCall => part.type === "tool-call",
    );
    if (call?.toolName !== COMPLETION_TOOL) {
      const asked: LanguageModelV3Message = {
        role: "assistant",
        content: [
          {
            type: "tool-call",
            toolCallId: call?.toolCallId ?? "",
            toolName: call?.toolName ?? "",
            input: call ? JSON.parse(call.input) : {},
          },
        ],
      };
      return { ...state, messages: [...state.messages, asked] };
    }
    const next = stageIds[state.stage + 1];
    if (next === undefined) return { ...state, done: true };
    return { stage: state.stage + 1, turn: 0, done: false, messages: [systemPrompt(next)] };
  };
  const runTool = async (
    state: AgentState,
    call: LanguageModelV3ToolCallPart,
  ): Promise<AgentState> => {
    const outcome = await lookup.execute(call.input, {
      root: "/",
      signal: new AbortController().signal,
      limits: { maxOutputBytes: 64 * 1024, timeoutMs: 120_000 },
    });
    const result: LanguageModelV3Message = {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: call.toolCallId,
          toolName: lookup.name,
          output: { type: "text", value: outcome.ok ? String(outcome.output) : "" },
        },
      ],
    };
    return { ...state, turn: state.turn + 1, messages: [...state.messages, result] };
  };
  const superStep = createStep({
    id: "model-or-tools",
    inputSchema: agentState,
    outputSchema: agentState,
    execute: async ({ inputData }) => {
      const call = pendingCall(inputData);
      return call ? runTool(inputData, call) : model(inputData);
    },
  });
  const workflow = createWorkflow({
    id: "bench-agent",
    inputSchema: agentState,
    outputSchema: agentState,
  })
    .dountil(superStep, async ({ inputData }) => inputData.done)
    .commit();
  // No logger and no telemetry: the LangGraph.js graph runs without LangSmith tracing, stagechart
  // without inspection.
  const mastra = new Mastra({
    workflows: { benchAgent: workflow },
    storage,
    logger: false,
    telemetry: { enabled: false },
  });
  return mastra.getWorkflow("benchAgent");
}

/** Runs the workload on a fresh run of the workflow to its end; the steps it took. */
export async function runMastra(
  workload: Workload,
  workflow: ReturnType<typeof mastraAgent>,
): Promise<AgentState> {
  const stageId = stageIdsOf(workload)[0] as string;
  const run = await workflow.createRunAsync();
  const outcome = await run.start({
    inputData: { stage: 0, turn: 0, done: false, messages: [systemPrompt(stageId)] },
  });
  if (outcome.status !== "success" || !outcome.result.done)
    throw new Error(`the Mastra run did not finish its stages (${outcome.status})`);
  return outcome.result;
}

/**
 * Mastra's default durable store, LibSQLStore on a local file. On a `file:` URL it sets WAL and
 * `synchronous = NORMAL` itself, the durability settings stagechart's store uses.
 */
export const libSqlStore = (file: string): LibSQLStore => new LibSQLStore({ url: `file:${file}` });

/**
 * Closes the store's connection, which LibSQLStore keeps private (it has no `close`). The libsql
 * client leaves a connection it began a transaction or batch on to the garbage collector, so the
 * file's WAL is folded in and removed only once that connection is collected: with `settle`,
 * garbage is collected (`node --expose-gc`) until the WAL is gone, for at most a second.
 */
export async function closeLibSql(store: LibSQLStore, settle?: { file: string }): Promise<void> {
  (store as unknown as { client: { close(): void } }).client.close();
  if (!settle) return;
  for (let wait = 0; wait < 100 && existsSync(`${settle.file}-wal`); wait++) {
    globalThis.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
