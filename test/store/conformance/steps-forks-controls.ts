import { describe, expect, it } from "vitest";
import type { PipelineEvent } from "../../../src/compiler/pipeline-context.js";
import type { ErrorView } from "../../../src/errors.js";
import * as z from "../../../src/zod.js";
import { failure, manualClock, newRun, okValue, type StoreHarness, started } from "./harness.js";

const entry = (text: string) => ({ role: "user" as const, text });
const requester = { pid: 42, host: "box", user: "ada", by: "reviewer" };
const cancel = { type: "CANCEL" } as PipelineEvent;
const forked = (runId: string) => ({
  type: "RunForked" as const,
  runId,
  payload: { from: { runId: "run-1", step: 1 } },
});

/**
 * The store contract's durable-run parts: a step's journal and transcripts in its
 * transaction, paged run lists, the control queue and forks. What every store must do alike.
 */
export function stepsForksControls(harness: StoreHarness): void {
  describe("a step with its journal and transcript entries", () => {
    it("stores them with its events, or none of them when one write fails", async () => {
      const { store } = await harness.fresh(manualClock());
      okValue(await store.createRun(newRun("run-1")));
      const key = "model:run-1/run-1/plan/1/0";
      // Its last write, a transcript entry of a run the store does not know, fails.
      await expect(
        store.commitStep("run-1", {
          snapshot: { at: "plan" },
          events: [started("run-1")],
          journal: [{ key, value: { reply: 1 } }],
          transcripts: [
            { stageExecutionId: "run-1/plan/1", key: "k1", entry: entry("look") },
            { stageExecutionId: "ghost/plan/1", key: "k1", entry: entry("lost") },
          ],
        }),
      ).rejects.toThrow();
      expect(await store.lastSeq("run-1")).toBe(0);
      expect(await store.stepsOf("run-1")).toEqual([]);
      expect(await store.get(key, z.unknown())).toBeUndefined();
      expect(await store.transcriptRows("run-1/plan/1")).toEqual([]);
      expect(failure(await store.getSnapshot("run-1")).code).toBe("Session/NoSnapshot");

      await store.commitStep("run-1", {
        snapshot: { at: "plan" },
        events: [started("run-1")],
        journal: [
          { key, value: { reply: 1 } },
          { key, value: { reply: 2 } },
        ],
        transcripts: [
          { stageExecutionId: "run-1/plan/1", key: "k2", entry: entry("second") },
          { stageExecutionId: "run-1/plan/1", key: "k1", entry: entry("first") },
          { stageExecutionId: "run-1/plan/1", key: "k2", entry: entry("second, again") },
        ],
      });
      expect(await store.lastSeq("run-1")).toBe(1);
      expect(await store.get(key, z.unknown())).toEqual({ reply: 1 });
      expect(await store.transcriptRows("run-1/plan/1")).toEqual([
        { key: "k1", entry: entry("first") },
        { key: "k2", entry: entry("second, again") },
      ]);
    });
  });

  describe("listing runs", () => {
    it("gives a page: the newest `limit` runs, optionally of one status, as summaries", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      for (const id of ["run-1", "run-2", "run-3", "run-4"]) {
        okValue(await store.createRun(newRun(id)));
        clock.advance(1);
      }
      okValue(await store.updateRun("run-2", { status: "done" }));
      okValue(await store.updateRun("run-4", { status: "done" }));

      const ids = (runs: { runId: string }[]) => runs.map((run) => run.runId);
      expect(ids(await store.listRuns())).toEqual(["run-4", "run-3", "run-2", "run-1"]);
      expect(ids(await store.listRuns({ limit: 2 }))).toEqual(["run-4", "run-3"]);
      expect(ids(await store.listRuns({ status: "done" }))).toEqual(["run-4", "run-2"]);
      expect(await store.listRuns({ status: "failed" })).toEqual([]);
      expect(await store.listRuns({ status: "running", limit: 1 })).toEqual([
        {
          runId: "run-3",
          pipelineId: "plan-build",
          status: "running",
          createdAt: "2030-01-01T00:00:00.002Z",
          updatedAt: "2030-01-01T00:00:00.002Z",
        },
      ]);
    });

    it("lists only the runs updated after a timestamp, a step or a status change alike", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      for (const id of ["run-1", "run-2", "run-3"]) okValue(await store.createRun(newRun(id)));
      const seen = (await store.listRuns())[0]?.updatedAt ?? "";
      expect(await store.listRuns({ updatedSince: seen })).toEqual([]);

      clock.advance(5);
      await store.commitStep("run-1", { snapshot: { at: "plan" }, events: [started("run-1")] });
      okValue(await store.updateRun("run-3", { status: "done" }));
      const changed = await store.listRuns({ updatedSince: seen });
      expect(changed.map((run) => [run.runId, run.updatedAt])).toEqual([
        ["run-3", "2030-01-01T00:00:00.005Z"],
        ["run-1", "2030-01-01T00:00:00.005Z"],
      ]);
      expect(await store.listRuns({ updatedSince: "2030-01-01T00:00:00.005Z" })).toEqual([]);
    });

    it("orders runs created in the same millisecond by creation", async () => {
      const { store } = await harness.fresh(manualClock());
      for (const id of ["run-b", "run-a", "run-c"]) okValue(await store.createRun(newRun(id)));
      expect((await store.listRuns()).map((run) => run.runId)).toEqual(["run-c", "run-a", "run-b"]);
    });
  });

  describe("the control queue", () => {
    it("takes a request from pending to applied once; a second settle is refused", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      const expiresAt = clock.now() + 30_000;
      const timeoutMs = 30_000;
      const first = await store.enqueueControl("run-1", { event: cancel, requester, timeoutMs });
      const second = await store.enqueueControl("run-1", {
        event: { type: "REDO", stage: "plan" } as PipelineEvent,
        requester,
        timeoutMs,
      });
      expect(first).toEqual({
        id: first.id,
        runId: "run-1",
        event: cancel,
        requester,
        requestedAt: "2030-01-01T00:00:00.000Z",
        expiresAt,
        status: "pending",
      });
      expect(await store.pendingControls("run-1")).toEqual([first, second]);
      expect(await store.controlRequest(first.id)).toEqual(first);

      clock.advance(5);
      expect(await store.settleControl(first.id, { status: "applied" })).toBe(true);
      expect(await store.settleControl(first.id, { status: "refused" })).toBe(false);
      expect(await store.controlRequest(first.id)).toEqual({
        ...first,
        status: "applied",
        settledAt: "2030-01-01T00:00:00.005Z",
      });
      expect(await store.pendingControls("run-1")).toEqual([second]);
      expect(await store.controlRequest(first.id + 1000)).toBeUndefined();
    });

    it("keeps why a request was refused or expired", async () => {
      const { store } = await harness.fresh(manualClock());
      okValue(await store.createRun(newRun("run-1")));
      const request = { event: cancel, requester, timeoutMs: 1 };
      const refused = await store.enqueueControl("run-1", request);
      const expired = await store.enqueueControl("run-1", request);
      const why: ErrorView = {
        class: "Session",
        code: "Session/IllegalTransition",
        message: "no",
        context: {},
      };
      expect(await store.settleControl(refused.id, { status: "refused", error: why })).toBe(true);
      expect(await store.settleControl(expired.id, { status: "expired" })).toBe(true);
      expect(await store.controlRequest(refused.id)).toMatchObject({
        status: "refused",
        error: why,
      });
      expect(await store.controlRequest(expired.id)).toMatchObject({ status: "expired" });
      expect((await store.controlRequest(expired.id))?.error).toBeUndefined();
      expect(await store.pendingControls("run-1")).toEqual([]);
    });

    it("reaches the run's owner through another process's store on the same database", async () => {
      const clock = manualClock();
      const { store, reopen } = await harness.fresh(clock);
      const requesting = okValue(await reopen(clock));
      okValue(await store.createRun(newRun("run-1")));
      okValue(await store.acquireLease("run-1", "owner", 10_000));
      expect(await requesting.leaseHolder("run-1")).toMatchObject({ owner: "owner" });
      const request = { event: cancel, requester, timeoutMs: 1_000 };
      const queued = await requesting.enqueueControl("run-1", request);
      expect(await store.pendingControls("run-1")).toEqual([queued]);
      expect(await store.settleControl(queued.id, { status: "applied" })).toBe(true);
      expect(await requesting.controlRequest(queued.id)).toMatchObject({ status: "applied" });
    });

    it("refuses a request for a run it does not know, and tells who holds a run's lease", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      await expect(
        store.enqueueControl("run-9", { event: cancel, requester, timeoutMs: 1 }),
      ).rejects.toMatchObject({ code: "Session/RunNotFound" });
      expect(await store.leaseHolder("run-1")).toBeUndefined();
      okValue(await store.acquireLease("run-1", "worker-1", 10_000));
      expect(await store.leaseHolder("run-1")).toEqual({
        owner: "worker-1",
        expiresAt: clock.now() + 10_000,
        expiresInMs: 10_000,
      });
    });
  });

  describe("a step that settles control requests", () => {
    it("settles the requests its owner took, in its transaction; a step settling one not taken stores nothing", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      const request = { event: cancel, requester, timeoutMs: 30_000 };
      const applied = await store.enqueueControl("run-1", request);
      const refused = await store.enqueueControl("run-1", request);
      const why: ErrorView = {
        class: "Session",
        code: "Session/IllegalTransition",
        message: "no",
        context: {},
      };
      expect(await store.takeControl(applied.id)).toBe(true);
      expect(await store.takeControl(refused.id)).toBe(true);
      expect(await store.settleControl(applied.id, { status: "expired" })).toBe(false);
      await store.commitStep("run-1", {
        events: [started("run-1")],
        controls: [
          { id: applied.id, status: "applied" },
          { id: refused.id, status: "refused", error: why },
        ],
      });
      expect(await store.controlRequest(applied.id)).toMatchObject({ status: "applied" });
      expect(await store.controlRequest(refused.id)).toMatchObject({
        status: "refused",
        error: why,
      });

      const pending = await store.enqueueControl("run-1", request);
      await expect(
        store.commitStep("run-1", {
          events: [started("run-1")],
          controls: [{ id: pending.id, status: "applied" }],
        }),
      ).rejects.toMatchObject({ code: "Session/LeaseLost" });
      expect(await store.lastSeq("run-1")).toBe(1);
      expect(await store.controlRequest(pending.id)).toMatchObject({ status: "pending" });
    });
  });

  describe("taking a control request", () => {
    it("marks it taken until its expiry on the store's clock; taken, it stays listed and cannot be withdrawn", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      okValue(await store.createRun(newRun("run-1")));
      const request = { event: cancel, requester, timeoutMs: 1_000 };
      const late = await store.enqueueControl("run-1", request);
      const taken = await store.enqueueControl("run-1", request);
      const withdrawn = await store.enqueueControl("run-1", request);
      expect(late.expiresAt).toBe(clock.now() + 1_000);
      clock.advance(999);
      expect(await store.takeControl(taken.id)).toBe(true);
      expect(await store.settleControl(withdrawn.id, { status: "expired" })).toBe(true);
      expect(await store.takeControl(withdrawn.id)).toBe(false);
      clock.advance(1);
      expect(await store.takeControl(late.id)).toBe(false);
      // The next owner of a run whose owner died after taking it takes it again.
      expect(await store.takeControl(taken.id)).toBe(true);
      expect(await store.settleControl(taken.id, { status: "expired" })).toBe(false);
      expect((await store.pendingControls("run-1")).map(({ id, status }) => [id, status])).toEqual([
        [late.id, "pending"],
        [taken.id, "taken"],
      ]);
    });
  });

  describe("a tool's result", () => {
    const output = { path: "notes.md", text: "x".repeat(2_000) };
    const toolKey = "tool:run-1/run-1/build/1/a1/t1/c0";
    const toolStep = {
      events: [],
      snapshot: { value: "build" },
      journal: [{ key: toolKey, value: { ok: true, result: output, durationMs: 3 } }],
      transcripts: [
        {
          stageExecutionId: "run-1/build/1",
          key: "k1",
          entry: {
            role: "tool" as const,
            toolCallId: "c1",
            tool: "Read",
            result: output,
            isError: false,
          },
        },
      ],
    };

    it("is stored once: the transcript entry of a call the step journaled refers to the journal entry", async () => {
      const { store, sql, entries } = await harness.fresh(manualClock());
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", toolStep);
      const stored = await sql(entries.stored);
      const holding = stored.filter((row) => String(row.entry).includes(output.text));
      expect(holding).toHaveLength(1);
      expect(await store.read("run-1/build/1")).toEqual([toolStep.transcripts[0]?.entry]);
      expect(await store.transcriptRows("run-1/build/1")).toEqual([
        { key: "k1", entry: toolStep.transcripts[0]?.entry },
      ]);
      expect(await store.transcriptsOf("run-1")).toEqual([
        { stageExecutionId: "run-1/build/1", key: "k1", entry: toolStep.transcripts[0]?.entry },
      ]);
    });

    it("is read back in a fork of the run, and a missing journal entry is Session/StoreCorrupt", async () => {
      const { store, sql, entries } = await harness.fresh(manualClock());
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", toolStep);
      okValue(await store.forkRun("run-1", 1, newRun("run-2"), { events: [forked("run-2")] }));
      expect(await store.read("run-2/build/1")).toEqual([toolStep.transcripts[0]?.entry]);
      for (const statement of entries.dropJournal("run-2")) await sql(statement);
      await expect(store.read("run-2/build/1")).rejects.toMatchObject({
        code: "Session/StoreCorrupt",
        message: expect.stringContaining("is missing"),
        context: { stageExecutionId: "run-2/build/1", key: "k1" },
      });
      expect(await store.read("run-1/build/1")).toEqual([toolStep.transcripts[0]?.entry]);
    });
  });

  describe("forking a run", () => {
    it("copies what the run had recorded by the step, under the new run's keys, and nothing later", async () => {
      const { store } = await harness.fresh(manualClock());
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", {
        events: [],
        snapshot: { value: "plan" },
        journal: [{ key: "model:run-1/run-1/plan/1/0", value: { reply: "first" } }],
        transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k0", entry: entry("system") }],
      });
      await store.commitStep("run-1", {
        events: [],
        snapshot: { value: "execute" },
        journal: [{ key: "model:run-1/run-1/plan/1/1", value: { reply: "second" } }],
        transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k1", entry: entry("later") }],
      });

      const run2 = okValue(
        await store.forkRun("run-1", 1, newRun("run-2"), {
          events: [forked("run-2")],
          snapshot: { value: "plan" },
        }),
      );
      expect(run2).toMatchObject({ runId: "run-2", status: "running" });
      expect(await store.get("model:run-2/run-2/plan/1/0", z.unknown())).toEqual({
        reply: "first",
      });
      expect(await store.get("model:run-2/run-2/plan/1/1", z.unknown())).toBeUndefined();
      expect(await store.read("run-2/plan/1")).toEqual([entry("system")]);
      expect((await store.auditOf("run-2")).map((e) => e.type)).toEqual(["RunForked"]);
      expect(okValue(await store.getSnapshot("run-2")).snapshot).toEqual({ value: "plan" });
      expect((await store.stepsOf("run-2")).map((s) => s.step)).toEqual([1]);
      // The source keeps all it had.
      expect(await store.get("model:run-1/run-1/plan/1/1", z.unknown())).toEqual({
        reply: "second",
      });
      expect(await store.read("run-1/plan/1")).toHaveLength(2);

      // A fork of step 2 takes what step 2 recorded too.
      okValue(await store.forkRun("run-1", 2, newRun("run-3"), { events: [forked("run-3")] }));
      expect(await store.read("run-3/plan/1")).toEqual([entry("system"), entry("later")]);
    });

    it("refuses a step without marks, or no such step, and an id in use, writing nothing", async () => {
      const { store, sql } = await harness.fresh(manualClock());
      okValue(await store.createRun(newRun("run-1")));
      await store.commitStep("run-1", { events: [], snapshot: { value: "plan" } });
      await store.commitStep("run-1", { events: [], snapshot: { value: "build" } });
      await sql("UPDATE steps SET journal_mark = NULL, transcript_mark = NULL WHERE step = 1");
      const first = { events: [forked("run-2")] };
      for (const step of [1, 3]) {
        const refused = await store.forkRun("run-1", step, newRun("run-2"), first);
        expect(failure(refused)).toMatchObject({
          code: "Session/ForkUnavailable",
          context: { runId: "run-1", step },
        });
      }
      expect(failure(await store.getRun("run-2")).code).toBe("Session/RunNotFound");
      const taken = await store.forkRun("run-1", 2, newRun("run-1"), first);
      expect(failure(taken).code).toBe("Session/RunExists");
      expect(await store.lastSeq("run-1")).toBe(0);
    });
  });
}
