import { join } from "node:path";
import { MemorySaver } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { createScriptedModel, SqliteStore } from "../../src/index.js";
import { type InterleavingPlan, timeInterleaved } from "../interleaved.js";
import { langGraphAgent, runLangGraph } from "../langgraph.js";
import { fileBytes, interleavedRow } from "../peer-rows.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, lookupTool, pipelineOf, scriptOf, type Workload } from "../workload.js";

/**
 * LangGraph's SQLite checkpointer on the durability settings stagechart's store uses: WAL with
 * `synchronous = NORMAL` (a commit is not synced; the WAL is at a checkpoint). Left alone,
 * SqliteSaver keeps SQLite's default, which on a new file is FULL (a sync per commit) and on a
 * file already in WAL mode NORMAL, so its cost would depend on whether the file existed.
 */
function sqliteSaver(file: string): SqliteSaver {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  return new SqliteSaver(db);
}

/** The workload of the comparison: 3 stages × `turns` turns, 1 kB tool outputs. */
export const langGraphWorkload = (turns: number): Workload => ({
  stages: 3,
  turns,
  outputBytes: 1000,
});

/** Bytes one run leaves in a fresh database of each engine, the connection closed. */
async function storedBytes(workload: Workload, dir: string) {
  const lookup = lookupTool(workload.outputBytes);
  const graphFile = join(dir, `langgraph-bytes-${workload.turns}.db`);
  const saver = sqliteSaver(graphFile);
  const graph = langGraphAgent(workload, createScriptedModel(scriptOf(workload)), lookup, saver);
  await runLangGraph(workload, graph);
  saver.db.close();
  const storeFile = join(dir, `stagechart-bytes-${workload.turns}.db`);
  const opened = SqliteStore.open(storeFile);
  if (!opened.ok) throw opened.error;
  await runToEnd(await pipelineOf(workload), hostFor(workload), opened.value);
  opened.value.close();
  return { langGraph: fileBytes(graphFile), stagechart: fileBytes(storeFile) };
}

/**
 * How the two engines alternate: rounds of a few runs a side, no collection forced between (a
 * run right after a forced full collection took 1.5–2× its time on both sides, as in the engine
 * overhead row): what one side leaves for the collector, the other side's runs may pay.
 */
const planFor = (turns: number): InterleavingPlan & { runsPerRound: number } =>
  // A LangGraph run of 100 turns a stage takes seconds: fewer rounds, the same for both engines.
  turns > 20
    ? { warmupRounds: 1, rounds: 5, collectGarbage: false, runsPerRound: 1 }
    : { warmupRounds: 5, rounds: 31, collectGarbage: false, runsPerRound: 4 };

/**
 * LangGraph.js (its SQLite checkpointer, a checkpoint after every super-step) against a durable
 * stagechart run (a commit per step) on the same work, then both in memory (LangGraph's
 * `MemorySaver`), then the bytes each leaves on disk. The two engines alternate round by round
 * (`bench/interleaved.ts`), so both see the same load; ratios are stagechart ÷ LangGraph.
 */
export async function langGraphSideBySide(turns: number, dir: string): Promise<Comparison[]> {
  const workload = langGraphWorkload(turns);
  const pipeline = await pipelineOf(workload);
  const lookup = lookupTool(workload.outputBytes);
  const model = createScriptedModel(scriptOf(workload));
  const saver = sqliteSaver(join(dir, `langgraph-${turns}.db`));
  const opened = SqliteStore.open(join(dir, `stagechart-${turns}.db`));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const label = `3 stages × ${turns} turns, 1 kB tool outputs`;
  const { runsPerRound, ...plan } = planFor(turns);
  const rounds = (run: () => Promise<unknown>) => async () => {
    for (let i = 0; i < runsPerRound; i++) await run();
  };
  try {
    const durableGraph = langGraphAgent(workload, model, lookup, saver);
    const durable = await timeInterleaved(
      {
        baseline: { run: rounds(() => runLangGraph(workload, durableGraph)) },
        candidate: { run: rounds(() => runToEnd(pipeline, hostFor(workload), store)) },
      },
      plan,
    );
    const memory = new MemorySaver();
    const memoryGraph = langGraphAgent(workload, model, lookup, memory);
    const inMemory = await timeInterleaved(
      {
        baseline: { run: rounds(() => runLangGraph(workload, memoryGraph, memory)) },
        candidate: { run: rounds(() => runToEnd(pipeline, hostFor(workload))) },
      },
      plan,
    );
    const bytes = await storedBytes(workload, dir);
    return [
      interleavedRow(
        `LangGraph.js durable (${label}), per run`,
        { baseline: "LangGraph + SqliteSaver", stagechart: "durable", peer: "langGraph" },
        durable,
        runsPerRound,
      ),
      interleavedRow(
        `LangGraph.js in memory (${label}), per run`,
        { baseline: "LangGraph + MemorySaver", stagechart: "in memory", peer: "langGraph" },
        inMemory,
        runsPerRound,
      ),
      compare(
        `LangGraph.js stored bytes (${label}), one run`,
        "bytes",
        { label: "LangGraph SQLite file", value: bytes.langGraph },
        { label: "stagechart SQLite file", value: bytes.stagechart },
      ),
    ];
  } finally {
    saver.db.close();
    store.close();
  }
}
