import { describe, expect, it } from "vitest";
import * as z from "../../../src/zod.js";
import { failure, newRun, okValue, type StoreHarness, started } from "./harness.js";

/** Runs, steps and their audit, the journal and transcripts: what every store must do alike. */
export function runsAndSteps(harness: StoreHarness): void {
  describe("runs", () => {
    it("reads back a created run as it was created, and refuses a second one with its id", async () => {
      const { store } = await harness.fresh();
      const created = okValue(await store.createRun(newRun("run-1")));
      expect(created).toMatchObject({ ...newRun("run-1"), status: "running" });
      expect(okValue(await store.getRun("run-1"))).toEqual(created);
      expect(failure(await store.createRun(newRun("run-1"))).code).toBe("Session/RunExists");
      expect(failure(await store.createRun(newRun("a/b"))).code).toBe("Validation/RunIdInvalid");
      expect(failure(await store.getRun("run-2")).code).toBe("Session/RunNotFound");
    });

    it("updates a run's status and output, clears its error, and lists runs newest first", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.createRun(newRun("run-2")));
      const error = {
        class: "ProviderTransient",
        code: "ProviderTransient/ModelTimeout",
        message: "slow",
        context: {},
      } as const;
      okValue(await store.updateRun("run-1", { status: "failed", error }));
      const done = okValue(
        await store.updateRun("run-1", { status: "done", error: undefined, output: { n: 1 } }),
      );
      expect(done).toMatchObject({ status: "done", output: { n: 1 } });
      expect(done.error).toBeUndefined();
      expect(okValue(await store.getRun("run-1"))).toEqual(done);
      expect(failure(await store.updateRun("nope", { status: "done" })).code).toBe(
        "Session/RunNotFound",
      );
      expect((await store.listRuns()).map((run) => run.runId)).toEqual(["run-2", "run-1"]);
    });
  });

  describe("steps", () => {
    it("number a run's events 1, 2, 3… across steps, keep the latest snapshot and every step", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      const first = await store.commitStep("run-1", {
        snapshot: { at: "plan" },
        events: [started("run-1"), started("run-1", { n: 2 })],
      });
      const second = await store.commitStep("run-1", { events: [started("run-1", { n: 3 })] });
      await store.commitStep("run-1", {
        snapshot: { at: "build" },
        definitionHash: "hash-2",
        events: [],
      });

      expect(first.map((e) => e.seq)).toEqual([1, 2]);
      expect(second.map((e) => e.seq)).toEqual([3]);
      expect(await store.lastSeq("run-1")).toBe(3);
      expect(await store.auditOf("run-1")).toEqual([...first, ...second]);
      expect((await store.auditOf("run-1", 2)).map((e) => e.payload)).toEqual([{ n: 3 }]);
      expect(okValue(await store.getSnapshot("run-1"))).toMatchObject({
        snapshot: { at: "build" },
        definitionHash: "hash-2",
      });
      expect((await store.stepsOf("run-1")).map(({ step, lastSeq }) => [step, lastSeq])).toEqual([
        [1, 2],
        [2, 3],
        [3, 3],
      ]);
      expect(await store.snapshotAtStep("run-1", 2)).toEqual({ at: "plan" });
      expect(await store.snapshotAtStep("run-1", 3)).toEqual({ at: "build" });
    });

    it("stamps a snapshot without a hash of its own with the run's", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", { snapshot: { at: "plan" }, events: [] });
      expect(okValue(await store.getSnapshot("run-1")).definitionHash).toBe("hash-1");
      expect(failure(await store.getSnapshot("run-2")).code).toBe("Session/NoSnapshot");
    });

    it("writes nothing of a step that carries another run's event, nor to an unknown run", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.createRun(newRun("run-2")));
      const mixed = { snapshot: { at: "x" }, events: [started("run-1"), started("run-2")] };
      await expect(store.commitStep("run-1", mixed)).rejects.toMatchObject({
        code: "Session/AuditRunMismatch",
      });
      expect(await store.lastSeq("run-1")).toBe(0);
      expect(await store.stepsOf("run-1")).toEqual([]);
      expect(failure(await store.getSnapshot("run-1")).code).toBe("Session/NoSnapshot");
      await expect(store.commitStep("run-9", { events: [] })).rejects.toMatchObject({
        code: "Session/RunNotFound",
      });
    });

    it("keep the sequence gapless when many steps of one run are committed at once", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      const steps = Array.from({ length: 20 }, (_, i) =>
        store.commitStep("run-1", {
          snapshot: { i },
          events: [started("run-1"), started("run-1")],
        }),
      );
      const seqs = (await Promise.all(steps)).flat().map((event) => event.seq);
      const expected = Array.from({ length: 40 }, (_, i) => i + 1);
      expect([...seqs].sort((a, b) => a - b)).toEqual(expected);
      expect((await store.auditOf("run-1")).map((event) => event.seq)).toEqual(expected);
      expect((await store.stepsOf("run-1")).map((step) => step.step)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
    });

    it("keep the audit log append-only: its rows can be neither changed nor deleted", async () => {
      const { store, sql } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", { events: [started("run-1")] });
      await expect(sql("UPDATE steps SET events = '[]'")).rejects.toThrow(/append-only/);
      await expect(sql("DELETE FROM steps")).rejects.toThrow(/append-only/);
      expect((await store.auditOf("run-1")).map((event) => event.type)).toEqual(["RunStarted"]);
    });
  });

  describe("the journal and transcripts", () => {
    it("give back what was recorded, keeping a key's first value", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      const shape = z.object({ reply: z.string() });
      expect(await store.get("model:run-1/s/1", shape)).toBeUndefined();
      await store.record("model:run-1/s/1", { reply: "first" });
      await store.record("model:run-1/s/1", { reply: "second" });
      expect(await store.get("model:run-1/s/1", shape)).toEqual({ reply: "first" });
    });

    it("read a stage execution's entries in key order (bytewise), before a key when asked", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      const execution = "run-1/plan/1";
      const user = (text: string) => ({ role: "user" as const, text });
      for (const key of ["b_2", "b-1", "B", "a"]) await store.put(execution, key, user(key));
      await store.put(execution, "a", user("a again"));
      await store.put("run-1/build/1", "a", user("other execution"));
      expect(await store.read(execution)).toEqual(["B", "a again", "b-1", "b_2"].map(user));
      expect(await store.read(execution, "b-1")).toEqual(["B", "a again"].map(user));
      expect(await store.read("run-1/none/1")).toEqual([]);
    });

    it("give back one run's entries at once: its journal as recorded, its transcripts by execution and key", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.createRun(newRun("run-2")));
      const user = (text: string) => ({ role: "user" as const, text });
      await store.commitStep("run-1", {
        events: [started("run-1")],
        journal: [
          { key: "tool:run-1/p2", value: { ok: true } },
          { key: "model:run-1/s/1", value: { reply: "one" } },
        ],
        transcripts: [
          { stageExecutionId: "run-1/plan/1", key: "b", entry: user("b") },
          { stageExecutionId: "run-1/build/1", key: "a", entry: user("build") },
          { stageExecutionId: "run-1/plan/1", key: "a", entry: user("a") },
        ],
      });
      await store.record("model:run-1/s/2", [2]);
      await store.record("model:run-2/s/1", "another run's");
      await store.put("run-2/plan/1", "a", user("another run's"));
      expect(await store.journalOf("run-1")).toEqual([
        { key: "tool:run-1/p2", value: '{"ok":true}' },
        { key: "model:run-1/s/1", value: '{"reply":"one"}' },
        { key: "model:run-1/s/2", value: "[2]" },
      ]);
      expect(await store.transcriptsOf("run-1")).toEqual([
        { stageExecutionId: "run-1/build/1", key: "a", entry: user("build") },
        { stageExecutionId: "run-1/plan/1", key: "a", entry: user("a") },
        { stageExecutionId: "run-1/plan/1", key: "b", entry: user("b") },
      ]);
      expect(await store.journalOf("run-3")).toEqual([]);
    });
  });
}
