import {
  copyFileSync,
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import type { StagechartError } from "../../src/errors.js";
import type { SqliteStore } from "../../src/store/index.js";
import { newRun, okValue, openStore, tempDir, tempStore } from "./support/temp-store.js";

const step = (runId: string, n: number) => ({
  events: [{ type: "StageInit" as const, runId, payload: { n } }],
  snapshot: { n },
});

const commitSteps = (store: SqliteStore, runId: string, count: number) => {
  for (let n = 1; n <= count; n++) store.commitStep(runId, step(runId, n));
};

/**
 * The store at `path` as it is left when its WAL is lost while its process is killed: its main
 * file (as of the last checkpoint) and the live runs' marks beside it, copied elsewhere.
 */
function withoutItsWal(path: string, marks = path): SqliteStore {
  const copy = join(tempDir(), "runs.db");
  copyFileSync(path, copy);
  if (existsSync(`${marks}.live`)) cpSync(`${marks}.live`, `${copy}.live`, { recursive: true });
  return openStore(copy);
}

const pathOf = (store: SqliteStore): string => Reflect.get(store, "path");

const contextsOf = (errors: StagechartError[]) =>
  errors.map(({ code, context }) => ({ code, ...context }));

describe("a SQLite store's live runs, marked outside the database", () => {
  it("a run's row outlives a WAL lost before any checkpoint: its mark holds it, and the store puts it back", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 3);

    const left = withoutItsWal(path);
    expect(okValue(left.getRun("run-1")).status).toBe("running");
    expect(left.stepsOf("run-1")).toEqual([]);
  });

  it("keeps the row in a binary file, which a tool searching a project holding the store passes over", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    const [mark] = readdirSync(`${path}.live`);
    const bytes = readFileSync(join(`${path}.live`, mark as string));
    expect(bytes.includes(0)).toBe(true);
    expect(bytes.toString("latin1")).not.toContain("pipelineId");
  });

  it("reads back the row of a mark an earlier stagechart wrote, deflated", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 2);
    const file = join(`${path}.live`, readdirSync(`${path}.live`)[0] as string);
    const bytes = readFileSync(file);
    const nul = bytes.indexOf(0);
    const row = Buffer.from(bytes.subarray(nul + 2).toString(), "base64");
    writeFileSync(file, Buffer.concat([bytes.subarray(0, nul + 1), deflateSync(row)]));

    const left = withoutItsWal(path);
    expect(okValue(left.getRun("run-1")).pipelineId).toBe("plan-build");
    expect(contextsOf(left.lostSteps())).toEqual([
      expect.objectContaining({ runId: "run-1", committedSteps: 2, storedSteps: 0 }),
    ]);
  });

  it("tells the steps a lost WAL took: what the run had committed and what is left", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 4);

    const left = withoutItsWal(path);
    const [lost] = left.lostSteps();
    expect(lost?.message).toContain(`${pathOf(left)}-wal`);
    expect(contextsOf(left.lostSteps())).toEqual([
      expect.objectContaining({
        code: "Session/StoreDamaged",
        runId: "run-1",
        committedSteps: 4,
        committedSeq: 4,
        storedSteps: 0,
        storedSeq: 0,
        runExists: true,
      }),
    ]);
  });

  it("puts back the row of a run created after the main file's last checkpoint, and tells its lost steps", () => {
    const { store, path } = tempStore();
    const before = join(tempDir(), "runs.db");
    copyFileSync(path, before);
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 2);

    const left = withoutItsWal(before, path);
    expect(contextsOf(left.lostSteps())).toEqual([
      expect.objectContaining({ runId: "run-1", committedSteps: 2, runExists: true }),
    ]);
  });

  it("tells nothing while the WAL is there: the same store opened again, after a crash", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 4);

    expect(openStore(path).lostSteps()).toEqual([]);
    expect(store.lostSteps()).toEqual([]);
  });

  it("drops a run's mark once it ended and a checkpoint put its steps in the main file, which closing the store takes", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 2);
    expect(existsSync(`${path}.live`)).toBe(true);

    okValue(store.updateRun("run-1", { status: "done" }));
    expect(existsSync(`${path}.live`)).toBe(true);
    store.close();
    expect(existsSync(`${path}.live`)).toBe(false);
    expect(withoutItsWal(path).lostSteps()).toEqual([]);
  });

  it("checkpoints runs that ended together: a moment after the first, or once 32 wait", async () => {
    const { store, path } = tempStore();
    for (let run = 1; run <= 31; run++) {
      okValue(store.createRun(newRun(`run-${run}`)));
      commitSteps(store, `run-${run}`, 1);
      okValue(store.updateRun(`run-${run}`, { status: "done" }));
    }
    expect(readdirSync(`${path}.live`)).toHaveLength(31);
    okValue(store.createRun(newRun("run-32")));
    commitSteps(store, "run-32", 1);
    okValue(store.updateRun("run-32", { status: "failed" }));
    expect(existsSync(`${path}.live`)).toBe(false);

    okValue(store.createRun(newRun("run-33")));
    commitSteps(store, "run-33", 1);
    okValue(store.updateRun("run-33", { status: "done" }));
    expect(existsSync(`${path}.live`)).toBe(true);
    await new Promise((settle) => setTimeout(settle, 1300));
    expect(existsSync(`${path}.live`)).toBe(false);
    expect(withoutItsWal(path).lostSteps()).toEqual([]);
  });

  it("keeps the mark of a run that ended and was taken up again before the checkpoint", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 1);
    okValue(store.updateRun("run-1", { status: "suspended" }));
    okValue(store.updateRun("run-1", { status: "running" }));
    store.commitStep("run-1", step("run-1", 2));
    store.close();

    expect(existsSync(`${path}.live`)).toBe(true);
  });

  it("keeps marks apart: a run resumed by another process goes on marking from the steps stored", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    okValue(store.createRun(newRun("run-2")));
    commitSteps(store, "run-1", 3);
    commitSteps(store, "run-2", 1);
    okValue(store.updateRun("run-2", { status: "failed" }));
    // Closing the store checkpoints: run-1's first three steps reach the main file.
    store.close();

    // Another process takes run-1 over and commits a step more.
    const other = openStore(path);
    okValue(other.acquireLease("run-1", "other", 15_000));
    other.commitStep("run-1", step("run-1", 4));

    expect(contextsOf(withoutItsWal(path).lostSteps())).toEqual([
      expect.objectContaining({ runId: "run-1", committedSteps: 4, storedSteps: 3 }),
    ]);
  });

  it("marks a fork with its row and its first step", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    commitSteps(store, "run-1", 2);
    store.close();
    const other = openStore(path);
    okValue(other.forkRun("run-1", 1, newRun("fork-1"), step("fork-1", 1)));

    const left = withoutItsWal(path);
    expect(okValue(left.getRun("fork-1")).runId).toBe("fork-1");
    expect(contextsOf(left.lostSteps())).toEqual([
      expect.objectContaining({ runId: "fork-1", committedSteps: 1, storedSteps: 0 }),
    ]);
  });
});
