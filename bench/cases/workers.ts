import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { postgresBinaries, startPostgres } from "../../test/support/postgres.js";
import {
  executionProblems,
  queueRuns,
  runsOf,
  startWorker,
  until,
} from "../../test/support/worker-fleet.js";
import { type Comparison, compare } from "../report.js";

export interface WorkerFleetCase {
  runs: number;
  /** How late each scripted reply comes: a model that takes time, as hosted ones do. */
  delayMs: number;
  /** Runs each worker process drives at once. */
  concurrency: number;
}

/**
 * `runs` queued runs of code-review-parallel on a fresh PostgreSQL, drained by one worker
 * process, then (on another fresh database) by three: wall time, runs per second, and the checks
 * that no run was executed by two workers at once. A third fleet of three, on 60 runs, loses a
 * worker to SIGKILL a third of the way through: its runs are taken over once their leases
 * expire. Skipped without a
 * PostgreSQL server (Debian's `postgresql`).
 */
export async function workerFleet(options: WorkerFleetCase): Promise<Comparison | undefined> {
  const binaries = postgresBinaries();
  if ("missing" in binaries) return undefined;
  const server = await startPostgres(binaries.bin);
  try {
    const one = await drain(await server.createDatabase(), 1, options, false);
    const three = await drain(await server.createDatabase(), 3, options, false);
    const killed = await drain(
      await server.createDatabase(),
      3,
      { ...options, runs: KILL_RUNS },
      true,
    );
    return compare(
      `${options.runs} queued runs of code-review-parallel, 1 worker process → 3`,
      "runs/s",
      { label: "1 worker", value: one.runsPerSecond },
      { label: "3 workers", value: three.runsPerSecond },
      {
        oneWorkerWallS: one.wallS,
        threeWorkersWallS: three.wallS,
        concurrencyPerWorker: options.concurrency,
        replyDelayMs: options.delayMs,
        leaseTtlMs: LEASE_TTL_MS,
        killRuns: KILL_RUNS,
        killFleetWallS: killed.wallS,
        killedWorkerRuns: killed.orphaned,
        killedRunsFinishedByOthersWithinS: killed.takeoverS,
        runsWithExecutionProblems: one.problems + three.problems + killed.problems,
        runsNotDone: one.notDone + three.notDone + killed.notDone,
      },
    );
  } finally {
    await server.stop();
  }
}

const LEASE_TTL_MS = 3000;
/** The fleet that loses a worker to SIGKILL a third of the way through its runs. */
const KILL_RUNS = 60;

async function drain(url: string, workers: number, options: WorkerFleetCase, killOne: boolean) {
  const opened = await PostgresStore.open(url);
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  try {
    const runIds = await queueRuns(store, url, {
      pipeline: "code-review-parallel",
      count: options.runs,
      delayMs: options.delayMs,
    });
    const flags = [
      ...["--concurrency", String(options.concurrency)],
      ...["--lease-ttl", String(LEASE_TTL_MS), "--poll", "50"],
    ];
    const started = performance.now();
    const fleet = Array.from({ length: workers }, () => startWorker(url, flags));
    const finished = () => fleet.reduce((sum, worker) => sum + runsOf(worker).done.length, 0);
    let orphaned: string[] = [];
    let killedAt = 0;
    const doomed = fleet[0];
    if (killOne && doomed) {
      await until(() => finished() >= options.runs / 3);
      doomed.child.kill("SIGKILL");
      await doomed.exited;
      killedAt = performance.now();
      const { started: taken, done } = runsOf(doomed);
      orphaned = taken.filter((runId) => !done.includes(runId));
    }
    let takenOverAt = 0;
    await until(() => {
      const survivorsDone = new Set(fleet.slice(killOne ? 1 : 0).flatMap((w) => runsOf(w).done));
      if (takenOverAt === 0 && orphaned.every((runId) => survivorsDone.has(runId)))
        takenOverAt = performance.now();
      return new Set(fleet.flatMap((worker) => runsOf(worker).done)).size === options.runs;
    }, 20);
    const wallMs = performance.now() - started;
    const survivors = fleet.slice(killOne ? 1 : 0);
    for (const worker of survivors) worker.child.kill("SIGTERM");
    await Promise.all(survivors.map((worker) => worker.exited));

    let problems = 0;
    let notDone = 0;
    for (const runId of runIds) {
      const run = await store.getRun(runId);
      if (!run.ok || run.value.status !== "done") notDone++;
      if (executionProblems(await store.auditOf(runId)).length > 0) problems++;
    }
    return {
      wallS: Math.round(wallMs / 10) / 100,
      runsPerSecond: Math.round((options.runs / (wallMs / 1000)) * 100) / 100,
      orphaned: orphaned.length,
      takeoverS: killOne ? Math.round((takenOverAt - killedAt) / 10) / 100 : undefined,
      problems,
      notDone,
    };
  } finally {
    await store.close();
  }
}
