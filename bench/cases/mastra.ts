import { join } from "node:path";
import { InMemoryStore } from "@mastra/core/storage";
import { createScriptedModel, SqliteStore } from "../../src/index.js";
import { type InterleavingPlan, timeInterleaved } from "../interleaved.js";
import { closeLibSql, libSqlStore, mastraAgent, runMastra } from "../mastra.js";
import { fileBytes, interleavedRow } from "../peer-rows.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, lookupTool, pipelineOf, scriptOf, type Workload } from "../workload.js";
import { langGraphWorkload } from "./langgraph.js";

/** Bytes one run leaves in a fresh database of each engine, the connection closed. */
async function storedBytes(workload: Workload, dir: string) {
  const mastraFile = join(dir, `mastra-bytes-${workload.turns}.db`);
  const store = libSqlStore(mastraFile);
  const model = createScriptedModel(scriptOf(workload));
  await runMastra(workload, mastraAgent(workload, model, lookupTool(workload.outputBytes), store));
  await closeLibSql(store, { file: mastraFile });
  const storeFile = join(dir, `stagechart-mastra-bytes-${workload.turns}.db`);
  const opened = SqliteStore.open(storeFile);
  if (!opened.ok) throw opened.error;
  await runToEnd(await pipelineOf(workload), hostFor(workload), opened.value);
  opened.value.close();
  return { mastra: fileBytes(mastraFile), stagechart: fileBytes(storeFile) };
}

/**
 * How the two engines alternate, as in the LangGraph.js rows: rounds of a few runs a side, no
 * collection forced between. A durable Mastra run of 1,000 turns a stage takes a minute or more
 * (its snapshot, the whole conversation, is written after each of its 6,000 steps): there, 3
 * rounds and no untimed one (a run of 6,000 steps warms itself up).
 */
const planFor = (turns: number): InterleavingPlan & { runsPerRound: number } => {
  if (turns >= 1000) return { warmupRounds: 0, rounds: 3, collectGarbage: false, runsPerRound: 1 };
  if (turns > 20) return { warmupRounds: 1, rounds: 5, collectGarbage: false, runsPerRound: 1 };
  return { warmupRounds: 5, rounds: 31, collectGarbage: false, runsPerRound: 4 };
};

/**
 * Mastra (a workflow snapshotted by LibSQLStore after every step) against a durable stagechart
 * run (a commit per step) on the same work, then both in memory (Mastra's `InMemoryStore`), then
 * the bytes each leaves on disk (up to 100 turns a stage). The two engines alternate round by
 * round (`bench/interleaved.ts`), so both see the same load; ratios are stagechart ÷ Mastra.
 */
export async function mastraSideBySide(turns: number, dir: string): Promise<Comparison[]> {
  const workload = langGraphWorkload(turns);
  const pipeline = await pipelineOf(workload);
  const lookup = lookupTool(workload.outputBytes);
  const model = createScriptedModel(scriptOf(workload));
  const libSql = libSqlStore(join(dir, `mastra-${turns}.db`));
  const opened = SqliteStore.open(join(dir, `stagechart-mastra-${turns}.db`));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const label = `3 stages × ${turns} turns, 1 kB tool outputs`;
  const { runsPerRound, ...plan } = planFor(turns);
  const rounds = (run: () => Promise<unknown>) => async () => {
    for (let i = 0; i < runsPerRound; i++) await run();
  };
  try {
    const durableAgent = mastraAgent(workload, model, lookup, libSql);
    const durable = await timeInterleaved(
      {
        baseline: { run: rounds(() => runMastra(workload, durableAgent)) },
        candidate: { run: rounds(() => runToEnd(pipeline, hostFor(workload), store)) },
      },
      plan,
    );
    const memoryAgent = mastraAgent(workload, model, lookup, new InMemoryStore());
    const inMemory = await timeInterleaved(
      {
        baseline: { run: rounds(() => runMastra(workload, memoryAgent)) },
        candidate: { run: rounds(() => runToEnd(pipeline, hostFor(workload))) },
      },
      plan,
    );
    // At 1,000 turns one more durable Mastra run would take another minute or more.
    const bytes = turns <= 100 ? await storedBytes(workload, dir) : undefined;
    const rows = [
      interleavedRow(
        `Mastra durable (${label}), per run`,
        { baseline: "Mastra + LibSQLStore", stagechart: "durable", peer: "mastra" },
        durable,
        runsPerRound,
      ),
      interleavedRow(
        `Mastra in memory (${label}), per run`,
        { baseline: "Mastra + InMemoryStore", stagechart: "in memory", peer: "mastra" },
        inMemory,
        runsPerRound,
      ),
    ];
    if (!bytes) return rows;
    const stored = compare(
      `Mastra stored bytes (${label}), one run`,
      "bytes",
      { label: "Mastra LibSQL file", value: bytes.mastra },
      { label: "stagechart SQLite file", value: bytes.stagechart },
    );
    return [...rows, stored];
  } finally {
    await closeLibSql(libSql);
    store.close();
  }
}
