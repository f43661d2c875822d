import { describe, expect, it } from "vitest";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import {
  executionProblems,
  queueRuns,
  runsOf,
  until,
  type WorkerProcess,
  workerProcesses,
} from "../support/worker-fleet.js";

const stores = sharedStores();
const worker = workerProcesses();

/** A lease short enough that a killed worker's runs are taken over within the test. */
const FLAGS = ["--concurrency", "2", "--lease-ttl", "1500", "--poll", "50"];

const allDone = (store: Awaited<ReturnType<typeof stores.fresh>>["store"], runIds: string[]) =>
  until(async () => {
    for (const runId of runIds) {
      const run = await store.getRun(runId);
      if (!run.ok || run.value.status !== "done") return false;
    }
    return true;
  }, 200);

/** Every run done, each executed by one worker at a time. */
async function expectEachRunOnce(
  store: Awaited<ReturnType<typeof stores.fresh>>["store"],
  runIds: string[],
) {
  for (const runId of runIds) {
    const run = await store.getRun(runId);
    expect(run.ok && run.value.status).toBe("done");
    expect({ runId, problems: executionProblems(await store.auditOf(runId)) }).toEqual({
      runId,
      problems: [],
    });
  }
}

const stopped = async (...workers: WorkerProcess[]) => {
  for (const worker of workers) worker.child.kill("SIGTERM");
  return Promise.all(workers.map((worker) => worker.exited));
};

describe.skipIf(noPostgres)("workers sharing a PostgreSQL store", () => {
  it("finish every run when one of three is SIGKILLed mid-run, no run executed by two at once", async () => {
    const { url, store } = await stores.fresh();
    const runIds = await queueRuns(store, url, {
      pipeline: "code-review-parallel",
      count: 12,
      delayMs: 60,
    });
    const [doomed, ...others] = [worker(url, FLAGS), worker(url, FLAGS), worker(url, FLAGS)];
    if (!doomed) throw new Error("no worker");
    // Mid-run: it has runs under way that it has not finished.
    await until(() => {
      const { started, done } = runsOf(doomed);
      return started.length > done.length && started.length >= 2;
    });
    doomed.child.kill("SIGKILL");
    await doomed.exited;
    const { started, done } = runsOf(doomed);
    // Still running under its leases (a "done" line may not have been written before the kill).
    const orphaned: string[] = [];
    for (const runId of started.filter((id) => !done.includes(id))) {
      const run = await store.getRun(runId);
      if (run.ok && run.value.status === "running") orphaned.push(runId);
    }

    await allDone(store, runIds);
    expect(await stopped(...others)).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    await expectEachRunOnce(store, runIds);
    expect(orphaned.length).toBeGreaterThan(0);
    const finishedByOthers = others.flatMap((worker) => runsOf(worker).done);
    for (const runId of orphaned) expect(finishedByOthers).toContain(runId);
    for (const worker of others) expect(worker.stderr()).not.toContain("stagechart:stagechart");
  }, 180_000);

  it("SIGTERM: a worker lets its runs store their step, gives them back and exits 0; another finishes them", async () => {
    const { url, store } = await stores.fresh();
    const runIds = await queueRuns(store, url, {
      pipeline: "code-review-parallel",
      count: 4,
      delayMs: 150,
    });
    const first = worker(url, FLAGS);
    await until(() => runsOf(first).started.length === 2);
    expect(await stopped(first)).toEqual([{ code: 0, signal: null }]);
    const { started, done } = runsOf(first);
    const givenBack = started.filter((runId) => !done.includes(runId));
    expect(givenBack.length).toBeGreaterThan(0);
    for (const runId of givenBack) {
      const run = await store.getRun(runId);
      expect(run.ok && run.value.status).toBe("queued");
      expect(await store.leaseHolder(runId)).toBeUndefined();
    }

    const second = worker(url, [...FLAGS, "--until-idle"]);
    expect(await second.exited).toEqual({ code: 0, signal: null });
    await expectEachRunOnce(store, runIds);
    for (const runId of givenBack) expect(runsOf(second).done).toContain(runId);
  }, 120_000);
});
