import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
} from "@ai-sdk/provider";

/**
 * The name of the error a call cut by its idle limit fails with. A cassette keeps a failure's
 * name and message, so a replayed call fails with this name too (as a plain `Error`): the name,
 * not the class, is what says the call was cut.
 */
export const IDLE_TIMEOUT_ERROR = "IdleTimeoutError";

export class IdleTimeoutError extends Error {
  override readonly name = IDLE_TIMEOUT_ERROR;
}

type Fetch = typeof globalThis.fetch;

/**
 * A model over `fetch` whose calls fail with an `IdleTimeoutError` when, once the response's
 * headers have come, the server sends nothing more for the call's idle limit
 * (`providerOptions.stagechart.idleTimeoutMs`). A server that stalls mid-reply would otherwise
 * hold a call until the whole call's limit; a reply that keeps coming is never cut, however long
 * it takes. The wait for the headers is not watched: a reply that is not streamed comes only when
 * the model has written all of it, which may take minutes — the whole call's limit bounds that.
 * `build` makes the model on a given `fetch` (the global one when none is given): each call gets
 * its own model, on a fetch that watches that call's response. Calls without an idle limit go to
 * one model on the global `fetch`.
 */
export function idleLimited(build: (fetch?: Fetch) => LanguageModelV3): LanguageModelV3 {
  const plain = build();
  return {
    specificationVersion: "v3",
    provider: plain.provider,
    modelId: plain.modelId,
    get supportedUrls() {
      return plain.supportedUrls;
    },
    async doGenerate(call) {
      const idleMs = idleLimitOf(call);
      if (idleMs === undefined) return plain.doGenerate(call);
      const watch = new IdleWatch(idleMs, call.abortSignal);
      try {
        return await build(watch.fetch).doGenerate({ ...call, abortSignal: watch.signal });
      } catch (error) {
        // The client reports the abort in its own words (or wraps it): the cause is ours to say.
        throw watch.timedOut ?? error;
      } finally {
        watch.clear();
      }
    },
    // A stream is watched until it ends: its pieces are the body's, each one restarts the timer.
    async doStream(call) {
      const idleMs = idleLimitOf(call);
      if (idleMs === undefined) return plain.doStream(call);
      const watch = new IdleWatch(idleMs, call.abortSignal);
      let result: Awaited<ReturnType<LanguageModelV3["doStream"]>>;
      try {
        result = await build(watch.fetch).doStream({ ...call, abortSignal: watch.signal });
      } catch (error) {
        watch.clear();
        throw watch.timedOut ?? error;
      }
      const reader = result.stream.getReader();
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) {
              watch.clear();
              controller.close();
            } else if (value.type === "error" && watch.timedOut) {
              // The client reports the abort in its own words: the cause is ours to say.
              controller.enqueue({ type: "error", error: watch.timedOut });
            } else {
              controller.enqueue(value);
            }
          } catch (error) {
            watch.clear();
            controller.error(watch.timedOut ?? error);
          }
        },
        cancel(reason) {
          watch.clear();
          return reader.cancel(reason);
        },
      });
      return { ...result, stream };
    },
  };
}

function idleLimitOf(call: LanguageModelV3CallOptions): number | undefined {
  const ms = call.providerOptions?.stagechart?.idleTimeoutMs;
  return typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/**
 * One call's idle timer: started when the response's headers come, restarted by each piece of
 * its body. When it runs out, the call's signal aborts with an `IdleTimeoutError`, which errors
 * the body being read. The signal follows the caller's too.
 */
class IdleWatch {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** Once the call is over or cut, nothing starts the timer again. */
  private settled = false;
  private cut: IdleTimeoutError | undefined;

  constructor(
    private readonly ms: number,
    private readonly parent: AbortSignal | undefined,
  ) {
    if (parent?.aborted) this.controller.abort(parent.reason);
    else parent?.addEventListener("abort", this.follow, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The error the call was cut with, if the timer ran out. */
  get timedOut(): IdleTimeoutError | undefined {
    return this.cut;
  }

  clear(): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.parent?.removeEventListener("abort", this.follow);
  }

  readonly fetch: Fetch = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    if (!response.body || this.settled) return response;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.expire, this.ms);
    this.timer.unref();
    const touch = this.touch;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, stream) {
          touch();
          stream.enqueue(chunk);
        },
      }),
    );
    const { status, statusText, headers } = response;
    return new Response(body, { status, statusText, headers });
  };

  private readonly touch = (): void => {
    if (!this.settled) this.timer?.refresh();
  };

  private readonly follow = (): void => {
    this.controller.abort(this.parent?.reason);
  };

  private readonly expire = (): void => {
    if (this.settled) return;
    this.settled = true;
    this.cut = new IdleTimeoutError(`the server sent nothing more of its reply for ${this.ms} ms`);
    this.controller.abort(this.cut);
  };
}
