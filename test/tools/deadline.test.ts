import { describe, expect, it } from "vitest";
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
});
