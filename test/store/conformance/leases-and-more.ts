import { describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION } from "../../../src/store/index.js";
import * as z from "../../../src/zod.js";
import {
  damageLatestSnapshot,
  failure,
  manualClock,
  newRun,
  okValue,
  type StoreHarness,
  started,
} from "./harness.js";

/** Leases, memory, migrations and damaged rows: what every store must do alike. */
export function leasesAndMore(harness: StoreHarness): void {
  describe("leases", () => {
    it("have one owner at a time, until the lease expires (to the millisecond)", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.acquireLease("run-1", "first", 10_000));
      clock.advance(9_999);
      expect(failure(await store.acquireLease("run-1", "second", 10_000))).toMatchObject({
        code: "Session/RunLocked",
        context: { runId: "run-1", owner: "first", expiresAt: "2030-01-01T00:00:10.000Z" },
      });
      clock.advance(1);
      okValue(await store.acquireLease("run-1", "second", 10_000));
      expect(failure(await store.acquireLease("run-1", "first", 10_000)).context).toMatchObject({
        owner: "second",
      });
      expect(failure(await store.acquireLease("run-9", "first", 10_000)).code).toBe(
        "Session/RunNotFound",
      );
    });

    it("go to exactly one of many owners asking at once, when free and when expired", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      const askAll = async (round: string) => {
        const owners = Array.from({ length: 12 }, (_, i) => `${round}-${i}`);
        const results = await Promise.all(owners.map((o) => store.acquireLease("run-1", o, 1_000)));
        return results.filter((result) => result.ok).length;
      };
      expect(await askAll("free")).toBe(1);
      clock.advance(1_000);
      expect(await askAll("expired")).toBe(1);
    });

    it("are seen by another process's store on the same database", async () => {
      const clock = manualClock();
      const { store, reopen } = await harness.fresh(clock);
      const other = okValue(await reopen(clock));
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.acquireLease("run-1", "first", 1_000));
      expect(failure(await other.acquireLease("run-1", "second", 1_000)).context).toMatchObject({
        owner: "first",
      });
      await store.releaseLease("run-1", "first");
      okValue(await other.acquireLease("run-1", "second", 1_000));
      expect(failure(await store.renewLease("run-1", "first", 1_000)).code).toBe(
        "Session/LeaseLost",
      );
    });

    it("renew for their owner only, even past expiry while nobody took over", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.acquireLease("run-1", "first", 1_000));
      expect(failure(await store.renewLease("run-1", "second", 1_000)).code).toBe(
        "Session/LeaseLost",
      );
      clock.advance(2_000);
      okValue(await store.renewLease("run-1", "first", 1_000));
      clock.advance(999);
      expect(failure(await store.acquireLease("run-1", "second", 1_000)).code).toBe(
        "Session/RunLocked",
      );
      clock.advance(1);
      okValue(await store.acquireLease("run-1", "second", 1_000));
      expect(failure(await store.renewLease("run-1", "first", 1_000))).toMatchObject({
        code: "Session/LeaseLost",
        context: { runId: "run-1", owner: "first" },
      });
    });

    it("are released by their owner only, and taken at once from a holder that is gone", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.acquireLease("run-1", "first", 60_000));
      await store.releaseLease("run-1", "second");
      expect(failure(await store.acquireLease("run-1", "second", 60_000)).code).toBe(
        "Session/RunLocked",
      );
      okValue(await store.acquireLease("run-1", "second", 60_000, (holder) => holder === "first"));
      await store.releaseLease("run-1", "second");
      okValue(await store.acquireLease("run-1", "third", 60_000));
    });
  });

  describe("memory", () => {
    it("recalls the last value written under a key, by namespace", async () => {
      const { store } = await harness.fresh();
      expect(await store.recall("ratings", "alice")).toBeUndefined();
      await store.remember("ratings", "alice", { elo: 1500 });
      await store.remember("ratings", "alice", { elo: 1516 });
      await store.remember("other", "alice", [1, "two", null]);
      expect(await store.recall("ratings", "alice")).toEqual({ elo: 1516 });
      expect(await store.recall("other", "alice")).toEqual([1, "two", null]);
    });

    it("lists a namespace's entries most recently written first, at most the limit", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      for (const key of ["a", "b", "c"]) {
        await store.remember("debates", key, key);
        clock.advance(1_000);
      }
      await store.remember("debates", "a", "a again");
      await store.remember("debates", "d", "same moment as a");
      const recent = await store.recent("debates", 3);
      expect(recent.map(({ key, value }) => [key, value])).toEqual([
        ["d", "same moment as a"],
        ["a", "a again"],
        ["c", "c"],
      ]);
      expect(recent[0]?.updatedAt).toBe("2030-01-01T00:00:03.000Z");
    });
  });

  describe("migrations", () => {
    it("bring a new database to the schema version once; opening it again changes nothing", async () => {
      const { store, reopen, sql } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      const again = okValue(await reopen());
      try {
        expect(okValue(await again.getRun("run-1")).runId).toBe("run-1");
      } finally {
        await again.close();
      }
      const versions = await sql("SELECT version FROM schema_version ORDER BY version");
      expect(versions.map((row) => row.version)).toEqual(MIGRATIONS.map((m) => m.version));
    });

    it("refuse a database written by a newer stagechart: Session/StoreTooNew", async () => {
      const { reopen, sql } = await harness.fresh();
      await sql(
        "INSERT INTO schema_version (version, applied_at, stagechart_version) VALUES (99, 'then', '9.9.9')",
      );
      expect(failure(await reopen())).toMatchObject({
        code: "Session/StoreTooNew",
        context: { found: 99, supported: SCHEMA_VERSION, writtenBy: "9.9.9" },
      });
    });
  });

  describe("a damaged row", () => {
    it("is Session/StoreCorrupt naming it, never taken for an absent one", async () => {
      const { store, sql, entries } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      await store.record("model:run-1/s/1", { reply: "x" });
      await store.put("run-1/s/1", "0001", { role: "user", text: "hi" });
      await store.remember("ratings", "alice", 1500);
      const damage = entries.damageOnly(
        { key: "model:run-1/s/1", value: '{"reply": 7}' },
        { entry: '{"role": "nobody"}' },
      );
      for (const statement of damage) await sql(statement);
      await sql("UPDATE memory SET value = '{oops'");

      const corrupt = (context: Record<string, unknown>) => ({
        code: "Session/StoreCorrupt",
        context,
      });
      await expect(
        store.get("model:run-1/s/1", z.object({ reply: z.string() })),
      ).rejects.toMatchObject(corrupt({ key: "model:run-1/s/1" }));
      await expect(store.read("run-1/s/1")).rejects.toMatchObject(
        corrupt({ stageExecutionId: "run-1/s/1", key: "0001" }),
      );
      await expect(store.recall("ratings", "alice")).rejects.toMatchObject(
        corrupt({ namespace: "ratings", key: "alice" }),
      );
      await expect(store.recent("ratings", 5)).rejects.toMatchObject(corrupt({ key: "alice" }));
      await sql("UPDATE runs SET options = 'not json'");
      await expect(store.getRun("run-1")).rejects.toMatchObject(
        corrupt({ runId: "run-1", column: "options" }),
      );
    });

    it("of a snapshot is Session/SnapshotCorrupt; of the audit log, marked damaged in its place", async () => {
      const { store, sql } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", { snapshot: { at: "plan" }, events: [started("run-1")] });
      await damageLatestSnapshot(sql, "run-1");
      await sql(
        `INSERT INTO steps (run_id, step, last_seq, at, events)
         VALUES ('run-1', 2, 3, 'then', '[{"at": "then", "type": "NoSuchEvent"}, "not json"]')`,
      );
      expect(failure(await store.getSnapshot("run-1"))).toMatchObject({
        code: "Session/SnapshotCorrupt",
        context: { runId: "run-1" },
      });
      const audit = await store.auditOf("run-1");
      expect(audit.map((event) => event.seq)).toEqual([1, 2, 3]);
      expect(audit[1]?.damaged).toMatch(/run run-1's audit event 2: its type "NoSuchEvent"/);
      expect(audit[2]?.damaged).toMatch(/run run-1's audit event 3/);
    });
  });
}
