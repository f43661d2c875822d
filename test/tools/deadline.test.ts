import { describe, expect, it, vi } from "vitest";
import { deadline } from "../../src/tools/deadline.js";

describe("a deadline", () => {
  it("aborts its signal with a TimeoutError when the time is up", async () => {
    const { signal } = deadline(5);
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
    expect((signal.reason as DOMException).name).toBe("TimeoutError");
  });

  it("never aborts once cleared, so finished work leaves no timer behind", async () => {
    const { signal, clear } = deadline(5);
    clear();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(signal.aborted).toBe(false);
  });

  it("aborts with the reason of the signal it follows, as soon as that one aborts", () => {
    const caller = new AbortController();
    const { signal } = deadline(60_000, caller.signal);
    caller.abort(new Error("stage cancelled"));
    expect((signal.reason as Error).message).toBe("stage cancelled");
  });

  it("stops following that signal once cleared", () => {
    const caller = new AbortController();
    const { signal, clear } = deadline(60_000, caller.signal);
    clear();
    caller.abort();
    expect(signal.aborted).toBe(false);
  });

  it("starts aborted when the signal it follows already is", () => {
    expect(deadline(60_000, AbortSignal.abort()).signal.aborted).toBe(true);
  });

  it("builds its AbortSignal only for work that reads it (one costs microseconds)", () => {
    const caller = new AbortController().signal;
    const reads = vi.spyOn(AbortController.prototype, "signal", "get");
    try {
      deadline(60_000, caller).clear();
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
  });

  it("tells its onAbort of a timeout or of the followed signal's abort, with the signal's reason", async () => {
    const caller = new AbortController();
    const heard: unknown[] = [];
    deadline(60_000, caller.signal, (reason) => heard.push(reason));
    caller.abort("stage cancelled");
    deadline(5, undefined, (reason) => heard.push((reason as DOMException).name));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heard).toEqual(["stage cancelled", "TimeoutError"]);
  });
});
