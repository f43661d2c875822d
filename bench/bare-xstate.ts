import type {
  LanguageModelV3Content,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3ToolCall,
} from "@ai-sdk/provider";
import { and, assign, createActor, fromPromise, setup, toPromise } from "xstate";
import type { AnyTool, JsonValue, ModelHandle } from "../src/index.js";
import { COMPLETION_TOOL, LOOKUP_TOOL, stageIdsOf, type Workload } from "./workload.js";

/**
 * The baseline: a bare XState v5 machine doing the same work as a stagechart run — per turn an
 * invoked promise actor calls the same scripted model, and a Lookup call runs the same tool —
 * with none of the engine around it (no audit, journal, approval, validation or snapshots).
 * Transcripts stay in machine context, as a plain XState agent would keep them.
 */
interface BareContext {
  stageIds: string[];
  stage: number;
  turn: number;
  messages: LanguageModelV3Message[];
  finished: LanguageModelV3Message[][];
  pending?: LanguageModelV3ToolCall;
}

const systemPrompt = (stageId: string): LanguageModelV3Message => ({
  role: "system",
  content: `Work on the task: benchmark the engine (${stageId}).`,
});

export function bareMachine(handle: ModelHandle, lookup: AnyTool) {
  const tools: LanguageModelV3FunctionTool[] = [
    { type: "function", name: lookup.name, inputSchema: lookup.inputSchema },
    { type: "function", name: COMPLETION_TOOL, inputSchema: { type: "object" } },
  ];
  const firstCall = (content: LanguageModelV3Content[]) =>
    content.find((part): part is LanguageModelV3ToolCall => part.type === "tool-call");
  return setup({
    types: {} as {
      context: BareContext;
      input: { stageIds: string[] };
      output: LanguageModelV3Message[][];
    },
    actors: {
      modelTurn: fromPromise(
        async ({
          input,
          signal,
        }: {
          input: { stageId: string; position: number; prompt: LanguageModelV3Message[] };
          signal: AbortSignal;
        }) => {
          const result = await handle.model.doGenerate({
            prompt: input.prompt,
            tools,
            toolChoice: { type: "auto" },
            abortSignal: signal,
            providerOptions: { stagechart: { stageId: input.stageId, position: input.position } },
          });
          return firstCall(result.content);
        },
      ),
      toolCall: fromPromise(
        async ({ input, signal }: { input: LanguageModelV3ToolCall; signal: AbortSignal }) => {
          const outcome = await lookup.execute(JSON.parse(input.input), {
            root: "/",
            signal,
            limits: { maxOutputBytes: 64 * 1024, timeoutMs: 120_000 },
          });
          return outcome.ok ? outcome.output : null;
        },
      ),
    },
    guards: {
      completes: ({ event }) =>
        (event as { output?: LanguageModelV3ToolCall }).output?.toolName === COMPLETION_TOOL,
      lastStage: ({ context }) => context.stage === context.stageIds.length - 1,
    },
  }).createMachine({
    id: "bare",
    context: ({ input }) => ({
      stageIds: input.stageIds,
      stage: 0,
      turn: 0,
      messages: [systemPrompt(input.stageIds[0] as string)],
      finished: [],
    }),
    initial: "thinking",
    output: ({ context }) => context.finished,
    states: {
      thinking: {
        invoke: {
          src: "modelTurn",
          input: ({ context }) => ({
            stageId: context.stageIds[context.stage] as string,
            position: context.turn,
            prompt: context.messages,
          }),
          onDone: [
            {
              guard: and(["completes", "lastStage"]),
              target: "done",
              actions: assign({
                finished: ({ context }) => [...context.finished, context.messages],
              }),
            },
            {
              guard: "completes",
              target: "thinking",
              reenter: true,
              actions: assign(({ context }) => ({
                finished: [...context.finished, context.messages],
                stage: context.stage + 1,
                turn: 0,
                messages: [systemPrompt(context.stageIds[context.stage + 1] as string)],
              })),
            },
            {
              target: "acting",
              actions: assign(({ context, event }) => ({
                pending: event.output,
                messages: [
                  ...context.messages,
                  { role: "assistant", content: event.output ? [event.output] : [] },
                ],
              })),
            },
          ],
        },
      },
      acting: {
        invoke: {
          src: "toolCall",
          input: ({ context }) => context.pending as LanguageModelV3ToolCall,
          onDone: {
            target: "thinking",
            actions: assign(({ context, event }) => ({
              turn: context.turn + 1,
              messages: [
                ...context.messages,
                {
                  role: "tool",
                  content: [
                    {
                      type: "tool-result",
                      toolCallId: context.pending?.toolCallId as string,
                      toolName: LOOKUP_TOOL,
                      output: { type: "json", value: event.output as JsonValue },
                    },
                  ],
                },
              ],
            })),
          },
        },
      },
      done: { type: "final" },
    },
  });
}

/** Runs the workload on the bare machine; resolves with every stage's transcript. */
export function runBare(
  workload: Workload,
  handle: ModelHandle,
  lookup: AnyTool,
  machine = bareMachine(handle, lookup),
): Promise<LanguageModelV3Message[][]> {
  const actor = createActor(machine, {
    input: { stageIds: stageIdsOf(workload) },
  });
  const done = toPromise(actor);
  actor.start();
  return done;
}
