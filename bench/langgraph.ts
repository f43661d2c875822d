import type { LanguageModelV3Message, LanguageModelV3ToolCall } from "@ai-sdk/provider";
import {
  AIMessage,
  type BaseMessage,
  RemoveMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import {
  Annotation,
  type BaseCheckpointSaver,
  END,
  MessagesAnnotation,
  REMOVE_ALL_MESSAGES,
  START,
  StateGraph,
} from "@langchain/langgraph";
import type { AnyTool, ModelHandle } from "../src/index.js";
import { COMPLETION_TOOL, stageIdsOf, type Workload } from "./workload.js";

/**
 * The same work as a stagechart run, written as a plain LangGraph.js agent graph: a `model` node
 * asks the same scripted model for the next tool call, a `tools` node runs the same Lookup tool,
 * and the messages live in graph state (the `MessagesAnnotation` reducer), checkpointed after
 * every super-step by the given saver. A stage's completion starts the next stage with a fresh
 * message list, as a stagechart stage starts a fresh transcript.
 */
const BenchState = Annotation.Root({
  ...MessagesAnnotation.spec,
  stage: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  turn: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  done: Annotation<boolean>({ reducer: (_, next) => next, default: () => false }),
});

type BenchStateValue = typeof BenchState.State;

const systemPrompt = (stageId: string) =>
  new SystemMessage(`Work on the task: benchmark the engine (${stageId}).`);

/** The graph's messages as the AI SDK prompt the scripted model takes. */
function toPrompt(messages: readonly BaseMessage[]): LanguageModelV3Message[] {
  return messages.map((message): LanguageModelV3Message => {
    if (message instanceof SystemMessage)
      return { role: "system", content: String(message.content) };
    if (message instanceof ToolMessage) {
      return {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: message.tool_call_id,
            toolName: message.name ?? "",
            output: { type: "text", value: String(message.content) },
          },
        ],
      };
    }
    const calls = (message as AIMessage).tool_calls ?? [];
    return {
      role: "assistant",
      content: calls.map((call) => ({
        type: "tool-call" as const,
        toolCallId: call.id ?? "",
        toolName: call.name,
        input: JSON.stringify(call.args),
      })),
    };
  });
}

export function langGraphAgent(
  workload: Workload,
  handle: ModelHandle,
  lookup: AnyTool,
  checkpointer: BaseCheckpointSaver,
) {
  const stageIds = stageIdsOf(workload);
  const tools = [
    { type: "function" as const, name: lookup.name, inputSchema: lookup.inputSchema },
    { type: "function" as const, name: COMPLETION_TOOL, inputSchema: { type: "object" as const } },
  ];
  const model = async (state: BenchStateValue): Promise<Partial<BenchStateValue>> => {
    const stageId = stageIds[state.stage] as string;
    const result = await handle.model.doGenerate({
      prompt: toPrompt(state.messages),
      tools,
      toolChoice: { type: "auto" },
      providerOptions: { stagechart: { stageId, position: state.turn } },
    });
    const call = result.content.find(
      (part): part is LanguageModelV3ToolCall => part.type === "tool-call",
    );
    if (call?.toolName !== COMPLETION_TOOL) {
      const args = call ? JSON.parse(call.input) : {};
      const toolCall = { id: call?.toolCallId ?? "", name: call?.toolName ?? "", args };
      return { messages: [new AIMessage({ content: "", tool_calls: [toolCall] })] };
    }
    const next = stageIds[state.stage + 1];
    if (next === undefined) return { done: true };
    return {
      stage: state.stage + 1,
      turn: 0,
      messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), systemPrompt(next)],
    };
  };
  const runTool = async (state: BenchStateValue): Promise<Partial<BenchStateValue>> => {
    const call = (state.messages.at(-1) as AIMessage).tool_calls?.[0];
    const outcome = await lookup.execute(call?.args ?? {}, {
      root: "/",
      signal: new AbortController().signal,
      limits: { maxOutputBytes: 64 * 1024, timeoutMs: 120_000 },
    });
    const content = outcome.ok ? String(outcome.output) : "";
    return {
      turn: state.turn + 1,
      messages: [new ToolMessage({ content, tool_call_id: call?.id ?? "", name: lookup.name })],
    };
  };
  const after = (state: BenchStateValue) => {
    if (state.done) return END;
    const last = state.messages.at(-1);
    return last instanceof AIMessage && (last.tool_calls?.length ?? 0) > 0 ? "tools" : "model";
  };
  return new StateGraph(BenchState)
    .addNode("model", model)
    .addNode("tools", runTool)
    .addEdge(START, "model")
    .addConditionalEdges("model", after, ["tools", "model", END])
    .addEdge("tools", "model")
    .compile({ checkpointer });
}

let threads = 0;

/**
 * Runs the workload on a fresh thread of the graph to its end. With `forgetting`, the saver the
 * graph checkpoints to, the thread is deleted from it once the run ends, as an in-memory
 * stagechart run lets its state go: one `MemorySaver` keeping every run's checkpoints held
 * 24 GB by the sixth run of 3 × 1,000 turns, and the process was killed for it.
 */
export async function runLangGraph(
  workload: Workload,
  graph: ReturnType<typeof langGraphAgent>,
  forgetting?: BaseCheckpointSaver,
): Promise<void> {
  const stageId = stageIdsOf(workload)[0] as string;
  const thread = `bench-${++threads}`;
  const final = await graph.invoke(
    { messages: [systemPrompt(stageId)] },
    {
      configurable: { thread_id: thread },
      recursionLimit: 10 * workload.stages * (workload.turns + 1),
    },
  );
  if (!final.done) throw new Error("the LangGraph run did not finish its stages");
  await forgetting?.deleteThread(thread);
}
