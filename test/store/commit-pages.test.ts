import { statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { StepCommit } from "../../src/store/index.js";
import { manualClock, newRun, okValue, tempStore } from "./support/temp-store.js";

const PAGE_SIZE = 1024;
const FRAME_HEADER = 24;

/** A step of a model turn: an audit event, a journal entry, a transcript entry, a snapshot. */
const turnStep = (turn: number): StepCommit => ({
  events: [{ type: "ModelTurn", runId: "run-1", payload: { turn } }],
  journal: [{ key: `model:run-1/plan/1/a1/t${turn}`, value: { text: `reply ${turn}` } }],
  transcripts: [
    {
      stageExecutionId: "run-1/plan/1",
      key: `t${String(turn).padStart(4, "0")}`,
      entry: { role: "assistant", text: `reply ${turn}`, calls: [] },
    },
  ],
  snapshot: { value: "plan", turn },
});

const walPages = (path: string): number =>
  (statSync(`${path}-wal`).size - 32) / (PAGE_SIZE + FRAME_HEADER);

describe("a committed step", () => {
  it("writes its row's table page, and no index page nor the run's row", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    // The run's creation was checkpointed, so the next commit would write the WAL over from its
    // start without growing it: emptied, the file grows by each commit's frames.
    Reflect.get(store, "db").pragma("wal_checkpoint(TRUNCATE)");
    const pages: number[] = [];
    for (let turn = 1; turn <= 30; turn += 1) {
      const before = walPages(path);
      store.commitStep("run-1", turnStep(turn));
      pages.push(walPages(path) - before);
    }
    // One row of steps holds the step's audit events, journal and transcript entries and its
    // snapshot's patch, keyed by the table's rowid: its table page and nothing else; a commit
    // that fills a leaf also writes the pages its split touches (here about every third commit).
    expect(pages.filter((count) => count === 1).length).toBeGreaterThanOrEqual(18);
    expect(pages.reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(2 * pages.length);
  });

  it("moves the run's updatedAt to the time of its last step", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-1"));
    clock.advance(5000);
    store.commitStep("run-1", turnStep(1));

    expect(okValue(store.getRun("run-1")).updatedAt).toBe("2030-01-01T00:00:05.000Z");
    expect(store.listRuns()[0]?.updatedAt).toBe("2030-01-01T00:00:05.000Z");
    clock.advance(1000);
    okValue(store.updateRun("run-1", { status: "done" }));
    expect(okValue(store.getRun("run-1")).updatedAt).toBe("2030-01-01T00:00:06.000Z");
  });
});
