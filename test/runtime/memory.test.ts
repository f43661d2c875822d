import { describe, expect, it } from "vitest";
import { HostMemory } from "../../src/runtime/memory.js";

describe("a host's own memory (a run without a store)", () => {
  it("recalls copies of what was remembered, and lists the latest writes first", () => {
    let now = Date.parse("2030-01-01T00:00:00.000Z");
    const memory = new HostMemory({ now: () => now });
    const value = { rating: 1200 };
    memory.remember("elo", "critic", value);
    value.rating = 0;
    now += 1000;
    memory.remember("elo", "solution", { rating: 1195 });
    memory.remember("elo", "critic", { rating: 1210 });
    memory.remember("other", "x", true);

    expect(memory.recall("elo", "critic")).toEqual({ rating: 1210 });
    expect(memory.recall("elo", "analyst")).toBeUndefined();
    expect(memory.recent("elo", 5)).toEqual([
      { key: "critic", value: { rating: 1210 }, updatedAt: "2030-01-01T00:00:01.000Z" },
      { key: "solution", value: { rating: 1195 }, updatedAt: "2030-01-01T00:00:01.000Z" },
    ]);
    expect(memory.recent("elo", 1).map((entry) => entry.key)).toEqual(["critic"]);
  });
});
