import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import type { PipelineContext } from "../../src/compiler/pipeline-context.js";
import {
  EMPTY_TABLE,
  entriesOf,
  lookup,
  recordOf,
  type StageTable,
  tableOf,
  withEntries,
  withEntry,
} from "../../src/compiler/stage-table.js";
import { stageDone } from "../../src/testing/events.js";
import { modelMachine } from "../../src/testing/model.js";
import { code, pipelineOf } from "../support/pipelines.js";

const ids = (n: number) => Array.from({ length: n }, (_, i) => `step-${i + 1}`);

/** The model machine of a chain of code stages, started. */
const chainActor = (stages: string[]) =>
  createActor(
    modelMachine(
      pipelineOf({
        stages: stages.map((id) => code(id, () => ({ verdict: "ok" }))),
        next: Object.fromEntries(stages.slice(1).map((id, i) => [stages[i] as string, id])),
      }),
    ),
    { input: { runId: "r", ctx: { task: "t" } } },
  ).start();

/** A table's buckets, as JSON writes them. */
const bucketsOf = <V>(table: StageTable<V>): Record<string, Record<string, V>> =>
  ((table as { toJSON?: () => unknown }).toJSON?.() ?? table) as Record<string, Record<string, V>>;

/** How many entries the buckets of `after` that are not `before`'s hold: what a change copied. */
function copiedEntries<V>(before: StageTable<V>, after: StageTable<V>): number {
  const was = bucketsOf(before);
  return Object.entries(bucketsOf(after))
    .filter(([key, bucket]) => was[key] !== bucket)
    .reduce((sum, [, bucket]) => sum + Object.keys(bucket).length, 0);
}

describe("a stage table", () => {
  it("reads back what was set, and leaves the table it was set on as it was", () => {
    const one = withEntry(EMPTY_TABLE as StageTable<number>, "plan", 1);
    const two = withEntry(one, "plan", 2);
    expect(lookup(one, "plan")).toBe(1);
    expect(lookup(two, "plan")).toBe(2);
    expect(lookup(two, "review")).toBeUndefined();
    // Keys an object inherits are not entries.
    expect(lookup(two, "constructor")).toBeUndefined();
    expect(lookup(two, "toString")).toBeUndefined();
  });

  it("holds the entries of a plain object, and gives them back as one", () => {
    const record = Object.fromEntries(ids(300).map((id, i) => [id, i]));
    const table = tableOf(record);
    expect(recordOf(table)).toEqual(record);
    expect([...entriesOf(table)]).toHaveLength(300);
    for (const id of ids(300)) expect(lookup(table, id)).toBe(record[id]);
    // Written as plain JSON, its buckets; read back from it, the plain object is a table too.
    const stored = JSON.parse(JSON.stringify(table));
    expect(recordOf(stored)).toEqual(record);
    expect(lookup(withEntry(stored, "step-1", -1), "step-1")).toBe(-1);
    expect(lookup(withEntry(stored, "step-1", -1), "step-2")).toBe(1);
  });

  it("shows nothing to a walk over its keys, so persisting a context does not look into it", () => {
    const table = tableOf(Object.fromEntries(ids(1000).map((id, i) => [id, { output: i }])));
    const keys: string[] = [];
    for (const key in table) keys.push(key);
    expect(keys).toEqual([]);
    expect(Object.keys(table)).toEqual([]);
  });

  it("copies one bucket of entries to set one entry, however many stages it holds", () => {
    for (const stages of [100, 1000, 5000]) {
      let table = EMPTY_TABLE as StageTable<number>;
      let most = 0;
      for (const id of ids(stages)) {
        const next = withEntry(table, id, 1);
        most = Math.max(most, copiedEntries(table, next));
        table = next;
      }
      // 64 buckets: about stages / 64 entries each, never all of them.
      expect(most).toBeLessThanOrEqual(Math.max(8, (3 * stages) / 64));
    }
  });

  it("sets many entries copying each bucket they touch once", () => {
    const table = tableOf(Object.fromEntries(ids(1000).map((id) => [id, 0])));
    const changed = withEntries(table, [
      ["step-1", 1],
      ["step-2", 2],
    ]);
    expect([
      lookup(changed, "step-1"),
      lookup(changed, "step-2"),
      lookup(changed, "step-3"),
    ]).toEqual([1, 2, 0]);
    expect(copiedEntries(table, changed)).toBeLessThanOrEqual((2 * (3 * 1000)) / 64);
  });
});

describe("the pipeline machine's context", () => {
  it("copies a bounded number of per-stage entries at each stage of a 2,000-stage chain", () => {
    const stages = ids(2000);
    const actor = chainActor(stages);
    const fields = ["visits", "results", "modelCalls", "upstreamOf"] as const;
    let most = 0;
    let before = actor.getSnapshot().context as PipelineContext;
    for (const id of stages) {
      const stageExecutionId = `r/${id}/1`;
      actor.send(
        stageDone(id, {
          stageId: id,
          stageExecutionId,
          verdict: "ok",
          output: { id },
          capHit: false,
          attemptCount: 1,
        }) as never,
      );
      const after = actor.getSnapshot().context as PipelineContext;
      const copied = fields.reduce(
        (sum, field) =>
          sum + copiedEntries<unknown>(before[field] as StageTable<unknown>, after[field]),
        0,
      );
      most = Math.max(most, copied);
      before = after;
    }
    expect(actor.getSnapshot().value).toBe("done");
    expect(recordOf(before.results)).toHaveProperty("step-2000.verdict", "ok");
    // A copied plain object per field would be up to 4 × 2,000 entries at the end.
    expect(most).toBeLessThanOrEqual(4 * ((3 * 2000) / 64));
  });
});

describe("a persisted pipeline snapshot", () => {
  it("holds the live context's tables as they are, not copies walked into", () => {
    const stages = ids(50);
    const actor = chainActor(stages);
    for (const id of stages.slice(0, 10)) {
      actor.send(
        stageDone(id, {
          stageId: id,
          stageExecutionId: `r/${id}/1`,
          verdict: "ok",
          output: { id },
          capHit: false,
          attemptCount: 1,
        }) as never,
      );
    }
    const live = actor.getSnapshot().context as PipelineContext;
    const persisted = actor.getPersistedSnapshot() as unknown as { context: PipelineContext };
    expect(persisted.context.results).toBe(live.results);
    expect(persisted.context.visits).toBe(live.visits);
    expect(recordOf(JSON.parse(JSON.stringify(persisted)).context.results)).toHaveProperty(
      "step-10.output.id",
      "step-10",
    );
  });
});
