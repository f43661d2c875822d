import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { Result } from "../../src/errors.js";
import { failure, manualClock, newRun, okValue, tempStore } from "./support/temp-store.js";
import { walCommits } from "./support/wal-commits.js";

const contender = fileURLToPath(new URL("./support/lease-contender.mjs", import.meta.url));

/** Another process asks for the lease once at each clock reading; its results, in order. */
async function contend(
  path: string,
  runId: string,
  owner: string,
  ttlMs: number,
  clock: number[],
): Promise<Result<void>[]> {
  const args = [contender, path, runId, owner, String(ttlMs), ...clock.map(String)];
  const { stdout } = await promisify(execFile)(process.execPath, args);
  return stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

describe("leases", () => {
  it("keep a second process out while the holder's lease is live, not after it expired", async () => {
    const clock = manualClock();
    const { store, path } = tempStore(clock);
    store.createRun(newRun("run-1"));
    okValue(store.acquireLease("run-1", "first", 10_000));
    const t0 = clock.now();

    const [whileLive, afterExpiry] = await contend(path, "run-1", "second", 10_000, [
      t0 + 9_999,
      t0 + 10_000,
    ]);

    expect(whileLive).toMatchObject({
      ok: false,
      error: {
        code: "Session/RunLocked",
        context: { runId: "run-1", owner: "first", expiresAt: "2030-01-01T00:00:10.000Z" },
      },
    });
    expect(afterExpiry).toEqual({ ok: true });
    clock.advance(10_001);
    expect(failure(store.acquireLease("run-1", "first", 10_000)).context).toMatchObject({
      owner: "second",
      expiresAt: "2030-01-01T00:00:20.000Z",
    });
  });

  it("let the holder acquire again, which extends the lease", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-1"));
    okValue(store.acquireLease("run-1", "first", 1_000));
    clock.advance(500);
    okValue(store.acquireLease("run-1", "first", 1_000));
    clock.advance(900);
    expect(failure(store.acquireLease("run-1", "second", 1_000)).code).toBe("Session/RunLocked");
  });

  it("are free for anyone once released, and only the holder can release one", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    okValue(store.acquireLease("run-1", "first", 60_000));
    store.releaseLease("run-1", "second");
    expect(failure(store.acquireLease("run-1", "second", 60_000)).code).toBe("Session/RunLocked");
    store.releaseLease("run-1", "first");
    okValue(store.acquireLease("run-1", "second", 60_000));
  });

  it("are given up with a run's last change, in its transaction, when its owner says so", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    okValue(store.acquireLease("run-1", "first", 60_000));
    store.commitStep("run-1", { events: [{ type: "RunStarted", runId: "run-1", payload: {} }] });
    const before = walCommits(path);

    okValue(store.updateRun("run-1", { status: "done" }, "first"));
    expect(walCommits(path) - before).toBe(1);
    expect(store.leaseHolder("run-1")).toBeUndefined();
    expect(okValue(store.getRun("run-1")).status).toBe("done");
  });

  it("renew only while still held, even past expiry if nobody took over", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-1"));
    okValue(store.acquireLease("run-1", "first", 1_000));
    clock.advance(2_000);
    okValue(store.renewLease("run-1", "first", 1_000));
    expect(failure(store.acquireLease("run-1", "second", 1_000)).code).toBe("Session/RunLocked");

    clock.advance(2_000);
    okValue(store.acquireLease("run-1", "second", 1_000));
    const lost = failure(store.renewLease("run-1", "first", 1_000));
    expect(lost.code).toBe("Session/LeaseLost");
    expect(lost.context).toEqual({ runId: "run-1", owner: "first" });
  });

  it("cannot be taken on a run the store does not know", () => {
    const { store } = tempStore();
    expect(failure(store.acquireLease("ghost", "first", 1_000)).code).toBe("Session/RunNotFound");
  });

  it("is taken over at once, before it expires, when the caller knows its holder is gone", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    okValue(store.acquireLease("run-1", "crashed", 60_000));
    expect(failure(store.acquireLease("run-1", "next", 60_000, () => false)).code).toBe(
      "Session/RunLocked",
    );
    okValue(store.acquireLease("run-1", "next", 60_000, (holder) => holder === "crashed"));
    expect(failure(store.renewLease("run-1", "crashed", 1_000)).code).toBe("Session/LeaseLost");
  });
});
