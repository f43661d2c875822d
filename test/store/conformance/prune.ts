import { describe, expect, it } from "vitest";
import { pruneRuns } from "../../../src/runtime/prune.js";
import type { StoredStatus } from "../../../src/runtime/run-records.js";
import type { RunStore } from "../../../src/runtime/store-port.js";
import * as z from "../../../src/zod.js";
import { failure, manualClock, newRun, okValue, type StoreHarness, started } from "./harness.js";

const DAY = 86_400_000;
const entry = (text: string) => ({ role: "user" as const, text });

/** A run of `steps` steps, each with a snapshot, a journal and a transcript entry, then `status`. */
async function storedRun(
  store: RunStore,
  runId: string,
  status: StoredStatus,
  steps = 4,
): Promise<void> {
  okValue(await store.createRun(newRun(runId)));
  for (let i = 1; i <= steps; i++) {
    await store.commitStep(runId, {
      events: i === 1 ? [started(runId)] : [],
      snapshot: { value: `state-${i}`, context: { runId, notes: "n".repeat(300 * i) } },
      journal: [{ key: `model:${runId}/${runId}/plan/1/${i}`, value: { reply: `r${i}` } }],
      transcripts: [{ stageExecutionId: `${runId}/plan/1`, key: `k${i}`, entry: entry(`t${i}`) }],
    });
  }
  if (status !== "running") okValue(await store.updateRun(runId, { status }));
}

const ids = (report: { runs: { runId: string }[] }) => report.runs.map(({ runId }) => runId);

/** Retention, alike on every store. */
export function pruneConformance(harness: StoreHarness): void {
  describe("pruning", () => {
    it("deletes ended runs that ended before the date, oldest first, and keeps live, leased and recent ones", async () => {
      const clock = manualClock();
      const { store, sql } = await harness.fresh(clock);
      for (const [runId, status] of [
        ["old-done", "done"],
        ["old-failed", "failed"],
        ["old-cancelled", "cancelled"],
        ["old-running", "running"],
        ["old-suspended", "suspended"],
        ["old-leased", "done"],
      ] as const)
        await storedRun(store, runId, status);
      okValue(await store.enqueueRun(newRun("old-queued")));
      okValue(await store.acquireLease("old-leased", "someone", 90 * DAY));
      clock.advance(40 * DAY);
      await storedRun(store, "new-done", "done");

      const report = okValue(
        await pruneRuns(store, { endedBefore: "30d", now: clock.now, batchSize: 2 }),
      );
      expect(ids(report)).toEqual(["old-done", "old-failed", "old-cancelled"]);
      expect(report).toMatchObject({ scope: "runs", dryRun: false, batches: 2 });
      expect(report.runs[0]).toMatchObject({ pipelineId: "plan-build", status: "done", steps: 4 });
      expect(report.bytesFreed).toBeGreaterThan(0);
      for (const runId of ids(report)) {
        expect(failure(await store.getRun(runId)).code).toBe("Session/RunNotFound");
        expect(await store.auditOf(runId)).toEqual([]);
        expect(await store.journalOf(runId)).toEqual([]);
        expect(await store.transcriptsOf(runId)).toEqual([]);
      }
      const left = (await store.listRuns()).map(({ runId }) => runId).sort();
      expect(left).toEqual([
        "new-done",
        "old-leased",
        "old-queued",
        "old-running",
        "old-suspended",
      ]);
      // What stays is whole.
      expect(await store.stepsOf("old-running")).toHaveLength(4);
      expect(await store.get("model:old-running/old-running/plan/1/4", z.unknown())).toEqual({
        reply: "r4",
      });
      // The prune log keeps the prune and each run it took.
      const [log] = await sql("SELECT scope, runs, bytes_freed, finished_at FROM prunes");
      expect(log).toMatchObject({ scope: "runs", runs: 3 });
      expect(Number(log?.bytes_freed)).toBe(report.bytesFreed);
      const taken = await sql("SELECT run_id, steps, last_seq FROM pruned_runs ORDER BY run_id");
      expect(taken.map((row) => row.run_id)).toEqual(["old-cancelled", "old-done", "old-failed"]);
    });

    it("keeps the newest N ended runs, and with a date too only prunes runs both select", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      for (const runId of ["a", "b", "c", "d"]) {
        await storedRun(store, runId, "done", 1);
        clock.advance(DAY);
      }
      await storedRun(store, "live", "running", 1);
      const both = okValue(await pruneRuns(store, { keep: 1, endedBefore: "3d", now: clock.now }));
      // a ended 4 days ago and b 3 days ago (to the millisecond, not before): only a is both.
      expect(ids(both)).toEqual(["a"]);
      expect(ids(okValue(await pruneRuns(store, { keep: 1, now: clock.now })))).toEqual(["b", "c"]);
      expect((await store.listRuns()).map(({ runId }) => runId)).toEqual(["live", "d"]);
    });

    it("in a dry run reports what a prune would take and the bytes it holds, and changes nothing", async () => {
      const clock = manualClock();
      const { store, sql } = await harness.fresh(clock);
      await storedRun(store, "old-1", "done");
      await storedRun(store, "old-2", "failed");
      await storedRun(store, "live", "running");
      clock.advance(10 * DAY);
      const count = async () =>
        (await sql("SELECT COUNT(*) AS n FROM steps"))[0]?.n?.toString() ?? "";
      const stepsBefore = await count();
      const dry = okValue(
        await pruneRuns(store, { endedBefore: "1d", dryRun: true, now: clock.now }),
      );
      expect(dry).toMatchObject({ dryRun: true, batches: 0 });
      expect(dry.pruneId).toBeUndefined();
      expect(ids(dry)).toEqual(["old-1", "old-2"]);
      expect(dry.bytesFreed).toBeGreaterThan(4 * 300);
      expect(await count()).toBe(stepsBefore);
      expect(await store.listRuns()).toHaveLength(3);
      expect(await sql("SELECT * FROM prunes")).toEqual([]);
      const real = okValue(await pruneRuns(store, { endedBefore: "1d", now: clock.now }));
      expect(ids(real)).toEqual(ids(dry));
      expect(real.runs.map(({ bytes }) => bytes)).toEqual(dry.runs.map(({ bytes }) => bytes));
    });

    it("refuses options that select nothing or do not read, with a code", async () => {
      const { store } = await harness.fresh(manualClock());
      for (const options of [
        {},
        { endedBefore: "last week" },
        { endedBefore: "30 days" },
        { keep: -1 },
        { keep: 1.5 },
        { keep: 1, batchSize: 0 },
      ])
        expect(failure(await pruneRuns(store, options)).code).toBe(
          "Validation/PruneCriteriaInvalid",
        );
    });

    it("with historyOnly keeps the runs, their audit logs and entries, and only their last snapshot", async () => {
      const clock = manualClock();
      const { store, sql } = await harness.fresh(clock);
      await storedRun(store, "old", "done", 6);
      await storedRun(store, "live", "running", 6);
      clock.advance(2 * DAY);
      const audit = await store.auditOf("old");
      const latest = okValue(await store.getSnapshot("old")).snapshot;
      const dry = okValue(
        await pruneRuns(store, {
          endedBefore: "1d",
          historyOnly: true,
          dryRun: true,
          now: clock.now,
        }),
      );
      const report = okValue(
        await pruneRuns(store, { endedBefore: "1d", historyOnly: true, now: clock.now }),
      );
      expect(report.scope).toBe("history");
      expect(ids(report)).toEqual(["old"]);
      expect(report.runs[0]?.bytes).toBe(dry.runs[0]?.bytes);
      expect(report.runs[0]?.bytes).toBeGreaterThan(0);
      expect(await store.auditOf("old")).toEqual(audit);
      expect(await store.stepsOf("old")).toHaveLength(6);
      expect(okValue(await store.getSnapshot("old")).snapshot).toEqual(latest);
      expect(await store.snapshotAtStep("old", 5)).toBeUndefined();
      expect(await store.get("model:old/old/plan/1/1", z.unknown())).toEqual({ reply: "r1" });
      expect(await store.read("old/plan/1")).toHaveLength(6);
      const stored = await sql(
        "SELECT COUNT(*) AS n FROM steps WHERE run_id = 'old' AND snapshot IS NOT NULL",
      );
      expect(Number(stored[0]?.n)).toBe(1);
      expect(await store.snapshotAtStep("live", 5)).toBeDefined();
      // Cut once: a second prune finds nothing more to take.
      const again = okValue(
        await pruneRuns(store, { endedBefore: "1d", historyOnly: true, now: clock.now }),
      );
      expect(ids(again)).toEqual([]);
    });

    it("leaves a fork of a pruned run whole", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await storedRun(store, "source", "done", 3);
      okValue(
        await store.forkRun("source", 2, newRun("fork"), {
          events: [
            { type: "RunForked", runId: "fork", payload: { from: { runId: "source", step: 2 } } },
          ],
          snapshot: { value: "state-2", context: { runId: "fork" } },
        }),
      );
      okValue(await store.updateRun("fork", { status: "suspended" }));
      clock.advance(2 * DAY);
      expect(ids(okValue(await pruneRuns(store, { endedBefore: "1d", now: clock.now })))).toEqual([
        "source",
      ]);
      expect(await store.get("model:fork/fork/plan/1/2", z.unknown())).toEqual({ reply: "r2" });
      expect(await store.read("fork/plan/1")).toEqual([entry("t1"), entry("t2")]);
      expect(okValue(await store.getSnapshot("fork")).snapshot).toMatchObject({ value: "state-2" });
      expect((await store.auditOf("fork")).map(({ type }) => type)).toEqual(["RunForked"]);
    });

    it("keeps the audit log append-only: no step is deleted but a pruned ended run's", async () => {
      const clock = manualClock();
      const { store, sql } = await harness.fresh(clock);
      await storedRun(store, "ended", "done", 2);
      await storedRun(store, "live", "running", 2);
      await expect(sql("DELETE FROM steps WHERE run_id = 'ended'")).rejects.toThrow(/append-only/);
      await expect(sql("DELETE FROM steps WHERE run_id = 'live'")).rejects.toThrow(/append-only/);
      clock.advance(2 * DAY);
      okValue(await pruneRuns(store, { endedBefore: "1d", now: clock.now }));
      // Its record names an ended run only, and neither it nor the prune's can change.
      await expect(
        sql(`INSERT INTO pruned_runs (prune_id, run_id, pipeline_id, status, created_at, ended_at,
          steps, last_seq, bytes, at) SELECT id, 'live', 'p', 'running',
          (SELECT created_at FROM runs WHERE run_id = 'live'), '', 0, 0, 0, '' FROM prunes`),
      ).rejects.toThrow(/only an ended run/);
      await expect(sql("DELETE FROM steps WHERE run_id = 'live'")).rejects.toThrow(/append-only/);
      await expect(sql("DELETE FROM pruned_runs")).rejects.toThrow(/append-only/);
      await expect(sql("DELETE FROM prunes")).rejects.toThrow(/append-only/);
      await expect(sql("UPDATE prunes SET runs = 0")).rejects.toThrow(/append-only/);
    });

    it("lets a live run commit between its batches", async () => {
      const clock = manualClock();
      const { store, reopen } = await harness.fresh(clock);
      for (let i = 0; i < 40; i++)
        await storedRun(store, `old-${String(i).padStart(2, "0")}`, "done", 2);
      await storedRun(store, "live", "running", 1);
      clock.advance(2 * DAY);
      const other = okValue(await reopen(clock));
      const commitsAt: number[] = [];
      let batches = 0;
      let pruning = true;
      const writer = (async () => {
        while (pruning) {
          await other.commitStep("live", {
            events: [],
            snapshot: { value: "live", n: commitsAt.length },
          });
          commitsAt.push(batches);
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      })();
      const report = okValue(
        await pruneRuns(store, {
          endedBefore: "1d",
          now: clock.now,
          batchSize: 4,
          onBatch: ({ batch }) => {
            batches = batch;
          },
        }),
      );
      pruning = false;
      await writer;
      expect(report.runs).toHaveLength(40);
      expect(report.batches).toBe(10);
      // Commits landed after the first batch and before the last.
      expect(commitsAt.some((batch) => batch >= 1 && batch < 10)).toBe(true);
      expect(await store.stepsOf("live")).toHaveLength(1 + commitsAt.length);
      expect(okValue(await store.getRun("live")).status).toBe("running");
    });
  });
}
