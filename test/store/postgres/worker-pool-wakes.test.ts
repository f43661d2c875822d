import { describe, expect, it } from "vitest";
import { ok } from "../../../src/errors.js";
import type { RunStore } from "../../../src/runtime/store-port.js";
import { startWorkerPool } from "../../../src/store/postgres/worker-pool.js";
import { until } from "../../support/worker-fleet.js";

/** A pool of one slot whose claims finish when told (each finds nothing), polling every 10 minutes. */
function heldClaims(store: Partial<RunStore> = {}) {
  const answers: ((runId: undefined) => void)[] = [];
  const pool = startWorkerPool({
    store: store as RunStore,
    claim: () => new Promise((answer) => answers.push(answer)),
    prepare: async () => {
      throw new Error("no run is ever claimed here");
    },
    idleMs: 600_000,
  });
  return { pool, answers };
}

describe("a worker pool's idle slot", () => {
  it("stops at once when stop() comes while its claim is under way, however long its poll", async () => {
    const { pool, answers } = heldClaims();
    await until(() => answers.length === 1);
    const stopped = pool.stop();
    answers[0]?.(undefined);
    // Not asleep when stop() woke the sleepers: it would have slept the whole poll.
    await stopped;
    expect(answers).toHaveLength(1);
  });

  it("looks again at once when a run is announced while its claim is under way", async () => {
    let announce = () => {};
    const { pool, answers } = heldClaims({
      watchQueue: async (onQueued) => {
        announce = onQueued;
        return ok({ close: async () => {} });
      },
    });
    await until(() => answers.length === 1);
    announce();
    answers[0]?.(undefined);
    await until(() => answers.length === 2);
    const stopped = pool.stop();
    answers[1]?.(undefined);
    await stopped;
    expect(answers).toHaveLength(2);
  });
});
