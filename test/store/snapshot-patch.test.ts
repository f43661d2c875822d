import { describe, expect, it } from "vitest";
import {
  applyPatch,
  diffSnapshots,
  packPatch,
  unpackPatch,
} from "../../src/store/snapshot-patch.js";

/** What a store reads back: the patch as JSON, applied to the JSON of the snapshot before. */
const roundTrip = (before: unknown, after: unknown): string =>
  JSON.stringify(
    applyPatch(
      JSON.parse(JSON.stringify(before)),
      JSON.parse(JSON.stringify(diffSnapshots(before, after))),
    ),
  );

/** A snapshot of the shape the pipeline machine has: state, context with stage tables, children. */
const snapshotOf = (turn: number) => ({
  status: "active",
  value: { stage: turn % 2 === 0 ? "calling" : "dispatch" },
  context: {
    visits: { 3: { plan: 1 }, 17: { review: turn } },
    results: turn > 2 ? { 3: { plan: { verdict: "ok", output: { steps: ["a", "b"] } } } } : {},
    upstream: Array.from({ length: turn % 4 }, (_, i) => ({ stage: `s${i}` })),
    note: turn === 3 ? undefined : `turn ${turn}`,
  },
  children: {},
});

describe("a snapshot patch", () => {
  it("turns one snapshot into the next, keys in the order the next has them", () => {
    for (let turn = 1; turn < 8; turn++) {
      const [before, after] = [snapshotOf(turn), snapshotOf(turn + 1)];
      expect(roundTrip(before, after)).toBe(JSON.stringify(after));
    }
  });

  it("writes what JSON writes: undefined, functions and symbols left out, holes as null, toJSON whole", () => {
    const before = { a: 1, b: undefined, list: [1, 2], at: new Date(0), f: () => 1 };
    const after = {
      a: undefined,
      b: 2,
      list: [1, undefined, () => 0, Symbol("s")],
      at: new Date(1000),
      f: () => 2,
      n: Number.NaN,
    };
    expect(roundTrip(before, after)).toBe(JSON.stringify(after));
    expect(roundTrip(after, before)).toBe(JSON.stringify(before));
  });

  it("sets a record whose keys moved whole, and one array that shrank whole", () => {
    const before = { record: { a: 1, b: 2 }, list: [1, 2, 3] };
    const after = { record: { b: 2, a: 1 }, list: [1, 2] };
    expect(diffSnapshots(before, after)).toEqual([
      [["record"], after.record],
      [["list"], after.list],
    ]);
    expect(roundTrip(before, after)).toBe(JSON.stringify(after));
  });

  it("adds and removes integer keys (stage table buckets) one by one, whatever their order", () => {
    const before = { table: { 5: { b: 1 }, name: "t" } };
    const after = { table: { 3: { a: 1 }, 5: { b: 1 }, name: "t" } };
    expect(diffSnapshots(before, after)).toEqual([[["table", "3"], { a: 1 }]]);
    expect(roundTrip(before, after)).toBe(JSON.stringify(after));
    expect(roundTrip(after, before)).toBe(JSON.stringify(before));
  });

  it("replaces the root when one side is not a record", () => {
    expect(roundTrip({ a: 1 }, [1])).toBe("[1]");
    expect(roundTrip("x", { a: 1 })).toBe('{"a":1}');
  });

  it("costs what changed: a part shared by identity is not looked into", () => {
    let reads = 0;
    const history = new Proxy(
      Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`stage-${i}`, { ok: true }])),
      {
        get(target, key, receiver) {
          reads += 1;
          return Reflect.get(target, key, receiver);
        },
        ownKeys(target) {
          reads += 1;
          return Reflect.ownKeys(target);
        },
      },
    );
    const before = { context: { history, turn: 1 } };
    const after = { context: { history, turn: 2 } };
    expect(diffSnapshots(before, after)).toEqual([[["context", "turn"], 2]]);
    expect(reads).toBe(0);
  });

  it("leaves the snapshot it is applied to as it was", () => {
    const base = { context: { a: { b: 1 }, c: [1] } };
    const text = JSON.stringify(base);
    applyPatch(base, [
      [["context", "a", "b"], 2],
      [["context", "c", 1], 2],
    ]);
    expect(JSON.stringify(base)).toBe(text);
  });

  it("refuses a patch made against another snapshot", () => {
    expect(() => applyPatch({ a: 1 }, [[["a", "b"], 2]])).toThrow(/not an object/);
    expect(() => applyPatch({ a: 1 }, [[["missing"]]])).toThrow(/does not have/);
  });
});

describe("a packed patch", () => {
  it("tells each path from the one before and reads back as the operations", () => {
    const ops = diffSnapshots(snapshotOf(2), snapshotOf(3));
    const packed = packPatch(ops);
    expect(unpackPatch(JSON.parse(JSON.stringify(packed)))).toEqual(ops);
    expect(JSON.stringify(packed).length).toBeLessThan(JSON.stringify(ops).length);
    expect(packPatch([[["a", "b", "c"], 1], [["a", "b", "d"]], [["e"], 2]])).toEqual([
      [0, "a", "b", "c", 1],
      [-3, "d"],
      [0, "e", 2],
    ]);
  });

  it("refuses what is not a packed operation", () => {
    expect(() => unpackPatch([["a", 1]])).toThrow(/not \[kept/);
    expect(() => unpackPatch([[3, "a", 1]])).toThrow(/does not follow/);
    expect(() => unpackPatch([[0, { a: 1 }, 1]])).toThrow(/not a string or index/);
  });
});

describe("a key whose value JSON left out", () => {
  it("gets one in its place: the record is set whole when a key after it is written", () => {
    const before = { status: "active", output: undefined, context: { a: 1 } };
    const after = { status: "done", output: { ok: true }, context: { a: 1 } };
    expect(roundTrip(before, after)).toBe(JSON.stringify(after));
  });
});
