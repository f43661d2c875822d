import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { manualClock, openStore, tempStore } from "./support/temp-store.js";

describe("the store's memory (what pipelines keep between runs)", () => {
  it("recalls what was remembered, by namespace and key, after the store is reopened", () => {
    const { store, path } = tempStore();
    store.remember("arena-debate/elo", "critic", { rating: 1210, matches: 1 });
    store.remember("other", "critic", "not the same entry");
    store.close();

    const reopened = openStore(path);
    expect(reopened.recall("arena-debate/elo", "critic")).toEqual({ rating: 1210, matches: 1 });
    expect(reopened.recall("other", "critic")).toBe("not the same entry");
    expect(reopened.recall("arena-debate/elo", "solution")).toBeUndefined();
  });

  it("replaces a key's value when it is written again", () => {
    const { store } = tempStore();
    store.remember("ns", "k", 1);
    store.remember("ns", "k", { again: true });
    expect(store.recall("ns", "k")).toEqual({ again: true });
    expect(store.recent("ns", 10).map((entry) => entry.key)).toEqual(["k"]);
  });

  it("lists a namespace's entries latest write first, up to a limit, with their time", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    for (const key of ["a", "b", "c"]) {
      store.remember("debates", key, { key });
      clock.advance(1000);
    }
    store.remember("debates", "a", { key: "a", again: true });
    store.remember("elsewhere", "z", 0);

    expect(store.recent("debates", 2)).toEqual([
      { key: "a", value: { key: "a", again: true }, updatedAt: "2030-01-01T00:00:03.000Z" },
      { key: "c", value: { key: "c" }, updatedAt: "2030-01-01T00:00:02.000Z" },
    ]);
  });

  it("reports an entry that does not read back as JSON as StoreCorrupt, naming it", () => {
    const { store, path } = tempStore();
    store.remember("ns", "k", 1);
    const db = new Database(path);
    db.prepare("UPDATE memory SET value = '{' WHERE key = 'k'").run();
    db.close();
    expect(() => store.recall("ns", "k")).toThrow(
      expect.objectContaining({
        code: "Session/StoreCorrupt",
        context: { namespace: "ns", key: "k" },
      }),
    );
  });
});
