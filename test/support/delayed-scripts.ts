import { parse, stringify } from "yaml";
import type { ModelHandle } from "../../src/models/types.js";

/** A scripted model's script with every entry answering after `delayMs` (a slow model). */
export function withDelays(script: string, delayMs: number): string {
  const parsed = parse(script) as { stages: Record<string, Record<string, unknown>[]> };
  for (const entries of Object.values(parsed.stages))
    for (const entry of entries) entry.delayMs = delayMs;
  return stringify(parsed);
}

/** The model's handle with each of its calls (generate or stream) passed through `around`. */
export function callsThrough(
  handle: ModelHandle,
  around: <T>(call: () => PromiseLike<T>) => Promise<T>,
): ModelHandle {
  const { model } = handle;
  return {
    ...handle,
    model: {
      ...model,
      specificationVersion: model.specificationVersion,
      provider: model.provider,
      modelId: model.modelId,
      supportedUrls: model.supportedUrls,
      doGenerate: (options) => around(() => model.doGenerate(options)),
      doStream: (options) => around(() => model.doStream(options)),
    },
  };
}

/** A model's calls as they start and as they are answered, counted through the real model. */
export function countingCalls(handle: ModelHandle): {
  handle: ModelHandle;
  calls: { started: number; answered: number };
} {
  const calls = { started: 0, answered: 0 };
  const counted = async <T>(call: () => PromiseLike<T>): Promise<T> => {
    calls.started++;
    const answer = await call();
    calls.answered++;
    return answer;
  };
  return { calls, handle: callsThrough(handle, counted) };
}
