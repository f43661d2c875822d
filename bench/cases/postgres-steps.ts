import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { postgresBinaries, startPostgres } from "../../test/support/postgres.js";
import { countStatements } from "../../test/support/postgres-statements.js";
import { type InterleavingPlan, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** Runs a side times per round, so that a round is not one short run's noise. */
const RUNS_PER_ROUND = 3;
const PLAN: InterleavingPlan = { warmupRounds: 4, rounds: 20, collectGarbage: false };

/**
 * The same durable run on PostgreSQL and on SQLite, on this machine: the statements the
 * PostgreSQL store sends per committed step (each one a round trip; those of the step commits
 * apart from the whole run's, which adds opening the run, its lease, its control polls and its
 * end), and the time per committed step on each store, the two alternating (wall time: the
 * PostgreSQL server's work is in another process). Undefined without a PostgreSQL server
 * (Debian's `postgresql`); the server is the tests' own, with fsync off, as SQLite's WAL here
 * syncs only at checkpoints.
 */
export async function postgresStepCost(
  workload: Workload,
  dir: string,
): Promise<Comparison | undefined> {
  const binaries = postgresBinaries();
  if ("missing" in binaries) return undefined;
  const server = await startPostgres(binaries.bin);
  const sqlite = SqliteStore.open(join(dir, "postgres-beside.db"));
  if (!sqlite.ok) throw sqlite.error;
  const postgres = await PostgresStore.open(await server.createDatabase());
  try {
    if (!postgres.ok) throw postgres.error;
    const pipeline = await pipelineOf(workload);
    const counted = countStatements(postgres.value);
    try {
      await runToEnd(pipeline, hostFor(workload), postgres.value);
    } finally {
      counted.restore();
    }
    const steps = counted.commits;
    const runs = (store: SqliteStore | PostgresStore) => async () => {
      for (let run = 0; run < RUNS_PER_ROUND; run++)
        await runToEnd(pipeline, hostFor(workload), store);
    };
    const timing = await timeInterleaved(
      { baseline: { run: runs(sqlite.value) }, candidate: { run: runs(postgres.value) } },
      PLAN,
    );
    const perStep = (ms: number) => ms / RUNS_PER_ROUND / steps;
    return compare(
      `PostgreSQL: ms per committed step against SQLite's (${workload.stages} stages × ${workload.turns} turns, durable)`,
      "ms",
      { label: "SQLite", value: perStep(timing.baselineMs.median) },
      { label: "PostgreSQL", value: perStep(timing.candidateMs.median) },
      {
        committedSteps: steps,
        statementsPerCommit: counted.inCommits / steps,
        mostStatementsInACommit: Math.max(...counted.perCommit),
        statementsPerStepWholeRun: counted.total / steps,
        pairedRatio: timing.pairedRatio.median,
        ratioLow: timing.pairedRatio.low,
        ratioHigh: timing.pairedRatio.high,
        rounds: timing.rounds,
      },
      2,
    );
  } finally {
    if (postgres.ok) await postgres.value.close();
    sqlite.value.close();
    await server.stop();
  }
}
