import { describe, expect, it } from "vitest";
import { StagechartError } from "../../../src/errors.js";
import { WriteQueue } from "../../../src/store/postgres/write-queue.js";

/** A write that finishes when the test says so, logging when it starts and ends. */
function gated(log: string[], name: string) {
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    open: () => open(),
    write: async () => {
      log.push(`start ${name}`);
      await gate;
      log.push(`end ${name}`);
    },
  };
}

describe("a write queue", () => {
  it("writes one at a time, in the order pushed, and drains once every write is done", async () => {
    const queue = new WriteQueue();
    const log: string[] = [];
    const [a, b] = [gated(log, "a"), gated(log, "b")];
    queue.push(a.write);
    queue.push(b.write);
    let drained = false;
    const draining = queue.drained().then(() => {
      drained = true;
    });
    await new Promise((later) => setImmediate(later));
    expect(log).toEqual(["start a"]);
    b.open();
    a.open();
    await draining;
    expect(drained).toBe(true);
    expect(log).toEqual(["start a", "end a", "start b", "end b"]);
  });

  it("stops at the first failure: nothing after it is written, and every later push and wait is told", async () => {
    const queue = new WriteQueue();
    const written: string[] = [];
    const full = new StagechartError("Session/StoreUnavailable", "no space left");
    queue.push(async () => written.push("step 1"));
    queue.push(async () => {
      throw full;
    });
    queue.push(async () => written.push("step 3"));
    await expect(queue.drained()).rejects.toBe(full);
    expect(written).toEqual(["step 1"]);
    expect(queue.failed).toBe(full);
    expect(() => queue.push(async () => written.push("step 4"))).toThrow(full);
  });

  it("tells a failure that is not a stagechart error as Session/StoreUnavailable", async () => {
    const queue = new WriteQueue();
    queue.push(async () => {
      throw new Error("connection reset");
    });
    await expect(queue.drained()).rejects.toMatchObject({ code: "Session/StoreUnavailable" });
  });
});
