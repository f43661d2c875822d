import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import type { ModelHandle } from "../../src/models/types.js";

/** A pause a test set: the stream is held before the part it picks, until `release`. */
export interface StreamPause {
  /** Resolves once a stream is held there. */
  held: Promise<void>;
  release(): void;
}

/**
 * The model's handle with its replies streamed through a tap that a test can hold at a part of
 * its choosing: a reply caught mid-way, as a slow provider leaves it, for as long as the test
 * needs. One pause at a time; the part it picks is held, then passed on once released.
 */
export function pausableStreams(handle: ModelHandle): {
  handle: ModelHandle;
  pauseBefore(picks: (part: LanguageModelV3StreamPart, call: number) => boolean): StreamPause;
} {
  let pause:
    | {
        picks: (part: LanguageModelV3StreamPart, call: number) => boolean;
        reached(): void;
        gate: Promise<void>;
      }
    | undefined;
  let calls = 0;
  const tapped = (
    stream: ReadableStream<LanguageModelV3StreamPart>,
  ): ReadableStream<LanguageModelV3StreamPart> => {
    const call = ++calls;
    const reader = stream.getReader();
    return new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        const current = pause;
        if (current?.picks(value, call)) {
          pause = undefined;
          current.reached();
          await current.gate;
        }
        controller.enqueue(value);
      },
    });
  };
  const { model } = handle;
  return {
    handle: {
      ...handle,
      model: {
        ...model,
        specificationVersion: model.specificationVersion,
        provider: model.provider,
        modelId: model.modelId,
        supportedUrls: model.supportedUrls,
        doGenerate: (options) => model.doGenerate(options),
        doStream: async (options) => {
          const result = await model.doStream(options);
          return { ...result, stream: tapped(result.stream) };
        },
      },
    },
    pauseBefore(picks) {
      let reached = () => {};
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      pause = { picks, reached, gate };
      return { held, release };
    },
  };
}
