import { copyFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { demoProject } from "../support/cli.js";
import { slowCodeReview } from "../support/slow-runs.js";
import { newRun, okValue, tempStore } from "./support/temp-store.js";

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
