import { copyFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { manualClock, newRun, okValue, tempDir, tempStore } from "./support/temp-store.js";

/** A run's status as the database file alone holds it: what checkpoints have copied there. */
function statusInFile(path: string, runId: string): string | undefined {
  const copy = join(tempDir(), "file-alone.db");
  copyFileSync(path, copy);
  const db = new Database(copy);
  try {
    const row = db.prepare("SELECT status FROM runs WHERE run_id = ?").get(runId) as
      | { status: string }
      | undefined;
    return row?.status;
  } finally {
    db.close();
  }
}

describe("the checkpoint after a run ends", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("puts a lone run that ends into the database file at once", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    okValue(store.updateRun("run-1", { status: "done" }));

    expect(statusInFile(path, "run-1")).toBe("done");
  });

  it("is shared by the runs that end within a second of the last one, a second after it", () => {
    const clock = manualClock();
    const { store, path } = tempStore(clock);
    for (const runId of ["run-1", "run-2", "run-3"]) store.createRun(newRun(runId));
    okValue(store.updateRun("run-1", { status: "done" }));
    clock.advance(100);
    okValue(store.updateRun("run-2", { status: "done" }));
    clock.advance(100);
    okValue(store.updateRun("run-3", { status: "suspended" }));

    expect(statusInFile(path, "run-1")).toBe("done");
    expect(statusInFile(path, "run-2")).toBe("running");
    expect(statusInFile(path, "run-3")).toBe("running");
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(900);
    expect(statusInFile(path, "run-2")).toBe("done");
    expect(statusInFile(path, "run-3")).toBe("suspended");
  });

  it("still waiting when the store closes, is made as it closes", () => {
    const clock = manualClock();
    const { store, path } = tempStore(clock);
    for (const runId of ["run-1", "run-2"]) store.createRun(newRun(runId));
    okValue(store.updateRun("run-1", { status: "done" }));
    okValue(store.updateRun("run-2", { status: "failed" }));
    store.close();

    expect(vi.getTimerCount()).toBe(0);
    expect(statusInFile(path, "run-2")).toBe("failed");
  });
});
