import { describe, expect, it, vi } from "vitest";
import { deadline, deadlineSeries } from "../../src/tools/deadline.js";

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

  it("adds one listener to the signal it follows, however many calls follow it", () => {
    const caller = new AbortController();
    const added = vi.spyOn(caller.signal, "addEventListener");
    const calls = Array.from({ length: 5 }, () => deadline(60_000, caller.signal));
    for (const call of calls.slice(0, 4)) call.clear();
    const last = calls[4]?.signal;
    caller.abort("stage cancelled");

    expect(added).toHaveBeenCalledTimes(1);
    expect(last?.reason).toBe("stage cancelled");
    expect(calls[0]?.signal.aborted).toBe(false);
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

describe("a series of deadlines", () => {
  it("gives a fresh signal to a call while an earlier one is still running", () => {
    const next = deadlineSeries();
    const running = next(60_000);
    const other = next(60_000);
    expect(other.signal).not.toBe(running.signal);
    running.clear();
    other.clear();
  });

  it("gives a fresh signal after one that aborted, or that a listener still holds", async () => {
    const next = deadlineSeries();
    const timedOut = next(5);
    const aborted = timedOut.signal;
    await new Promise((resolve) => aborted.addEventListener("abort", resolve));
    timedOut.clear();
    const heard = next(60_000);
    expect(heard.signal).not.toBe(aborted);
    expect(heard.signal.aborted).toBe(false);
    heard.signal.addEventListener("abort", () => {});
    heard.clear();
    const after = next(60_000);
    expect(after.signal).not.toBe(heard.signal);
    after.clear();
  });

  it("gives a call the signal of an earlier one that is over and nothing listens to, and that only once, however often the earlier call is cleared", () => {
    const next = deadlineSeries();
    const first = next(60_000);
    const signal = first.signal;
    first.clear();
    const second = next(60_000);
    expect(second.signal).toBe(signal);
    first.clear();
    expect(next(60_000).signal).not.toBe(signal);
    second.clear();
  });

  it("aborts a reused signal only for the call now running: its own timeout or its parent", () => {
    const next = deadlineSeries();
    const first = next(60_000, new AbortController().signal);
    const signal = first.signal;
    first.clear();
    const caller = new AbortController();
    const second = next(60_000, caller.signal);
    expect(second.signal).toBe(signal);
    caller.abort("stage cancelled");
    expect(signal.reason).toBe("stage cancelled");
  });

  it("no longer aborts a signal it gave back, though its parent aborts while it is cleared", () => {
    const next = deadlineSeries();
    const parent = new AbortController();
    let second: ReturnType<typeof next> | undefined;
    // A follower told first ends the first call and starts the next, mid-dispatch.
    deadline(60_000, parent.signal, () => {
      first.clear();
      second = next(60_000);
    });
    const first = next(60_000, parent.signal);
    const signal = first.signal;
    parent.abort("stage cancelled");
    expect(second?.signal).toBe(signal);
    expect(signal.aborted).toBe(false);
    second?.clear();
  });

  it("tells every follower of an aborted signal, though one's onAbort throws", async () => {
    const parent = new AbortController();
    const thrown = new Promise((resolve) => process.once("uncaughtException", resolve));
    deadline(60_000, parent.signal, () => {
      throw new Error("listener failed");
    });
    const other = deadline(60_000, parent.signal);
    parent.abort("stage cancelled");
    expect(other.signal.reason).toBe("stage cancelled");
    expect(((await thrown) as Error).message).toBe("listener failed");
  });
});
