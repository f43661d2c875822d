import { spawnSync } from "node:child_process";
import { copyFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { demoProject } from "../support/cli.js";
import { slowCodeReview } from "../support/slow-runs.js";
import { newRun, okValue, openStore, tempStore } from "./support/temp-store.js";

const step = (n: number) => ({
  events: [{ type: "StageInit" as const, runId: "run-1", payload: { n } }],
  snapshot: { n },
});

/** What `work` threw. */
function thrownBy(work: () => unknown): unknown {
  try {
    work();
  } catch (error) {
    return error;
  }
  throw new Error("expected it to throw");
}

const removeStore = (path: string) => {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
};

/** Whether another process can take the SQLite file at `path` for itself (an exclusive lock). */
function takenElsewhere(path: string): boolean {
  const script = `const Database = require("better-sqlite3");
    const db = new Database(process.argv[1], { timeout: 0 });
    db.pragma("locking_mode = EXCLUSIVE");
    try { db.exec("BEGIN EXCLUSIVE; COMMIT"); console.log("taken"); } catch { console.log("busy"); }`;
  const child = spawnSync(process.execPath, ["-e", script, path], { encoding: "utf8" });
  return child.stdout.trim() === "taken";
}

describe("a store's file shared by two stores of one process", () => {
  it("keeps the other store's locks when one closes: the file is not another process's to take", () => {
    const { store: first, path } = tempStore();
    const second = openStore(path);
    okValue(second.createRun(newRun("run-1")));
    expect(takenElsewhere(path)).toBe(false);

    first.close();
    expect(takenElsewhere(path)).toBe(false);
    second.commitStep("run-1", step(1));
  });
});

describe("a store whose file goes away under it", () => {
  it("refuses every write once its file is deleted: Session/StoreUnavailable naming the file", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    store.commitStep("run-1", step(1));
    removeStore(path);

    const error = thrownBy(() => store.commitStep("run-1", step(2)));
    expect(error).toBeInstanceOf(StagechartError);
    expect(error).toMatchObject({
      code: "Session/StoreUnavailable",
      context: { path, storeGone: "deleted" },
    });
    expect((error as Error).message).toContain(path);
    expect(thrownBy(() => store.updateRun("run-1", { status: "done" }))).toMatchObject({
      code: "Session/StoreUnavailable",
    });
    expect(thrownBy(() => store.releaseLease("run-1", "someone"))).toMatchObject({
      code: "Session/StoreUnavailable",
    });
  });

  it("refuses every write once another file takes its place (a copy put back over it)", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    copyFileSync(path, `${path}.copy`);
    renameSync(`${path}.copy`, path);

    expect(thrownBy(() => store.commitStep("run-1", step(1)))).toMatchObject({
      code: "Session/StoreUnavailable",
      context: { path, storeGone: "replaced" },
    });
  });

  it("refuses a run's status change once its file was moved elsewhere: the path is looked up then", () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    renameSync(path, `${path}.moved`);

    expect(thrownBy(() => store.updateRun("run-1", { status: "done" }))).toMatchObject({
      code: "Session/StoreUnavailable",
      context: { path, storeGone: "deleted" },
    });
  });

  it("looks its path up once a second between status changes, a step's write checked from the open file", async () => {
    const { store, path } = tempStore();
    okValue(store.createRun(newRun("run-1")));
    renameSync(path, `${path}.moved`);
    // Still linked, under another name: the steps go on into the moved file for now.
    for (let n = 1; n <= 5; n++) store.commitStep("run-1", step(n));
    await new Promise((resolve) => setTimeout(resolve, 1100));

    expect(thrownBy(() => store.commitStep("run-1", step(6)))).toMatchObject({
      code: "Session/StoreUnavailable",
      context: { path, storeGone: "deleted" },
    });
  });

  it("fails a run whose store is removed mid-run: non-zero exit, the code and the file named, never `done`", async () => {
    const project = demoProject();
    const path = join(project, "s.db");
    const run = slowCodeReview(project, path, { delayMs: 300, runId: "gone" });
    await run.printed("plan turn 1");
    removeStore(path);

    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.stderr()).toContain(`Session/StoreUnavailable: the store at ${path} was deleted`);
    expect(run.stdout()).not.toContain("run gone done");
  }, 30_000);
});
