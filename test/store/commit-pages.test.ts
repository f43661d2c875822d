import { statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { StepCommit } from "../../src/store/index.js";
import { manualClock, newRun, okValue, tempStore } from "./support/temp-store.js";

const PAGE_SIZE = 1024;
const FRAME_HEADER = 24;

/** A step of a model turn: an audit event, a journal entry, a transcript entry, a snapshot. */
const turnStep = (turn: number): StepCommit => ({
  events: [{ type: "ModelTurn", runId: "run-1", payload: { turn } }],
  journal: [{ key: `run-1/plan/1/a1/t${turn}/model`, value: { text: `reply ${turn}` } }],
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
  it("writes a page per table and index it adds a row to, and none for the run's row", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    for (let turn = 1; turn <= 3; turn += 1) store.commitStep("run-1", turnStep(turn));

    const before = walPages(path);
    store.commitStep("run-1", turnStep(4));
    // journal, transcripts and steps (which holds the audit events and the snapshot's delta):
    // each a table page and its key's index page.
    expect(walPages(path) - before).toBe(6);
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
