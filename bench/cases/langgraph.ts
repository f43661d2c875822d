import { statSync } from "node:fs";
import { join } from "node:path";
import { MemorySaver } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { createScriptedModel, SqliteStore } from "../../src/index.js";
import { langGraphAgent, runLangGraph } from "../langgraph.js";
import { timeSideBySide } from "../measure.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, lookupTool, pipelineOf, scriptOf, type Workload } from "../workload.js";

/** Issue 14's goal: stagechart at least 3× faster than LangGraph.js on the same work. */
const THREE_TIMES_FASTER = 1 / 3;

const fileBytes = (file: string): number => {
  let total = 0;
  for (const each of [file, `${file}-wal`]) {
    try {
      total += statSync(each).size;
    } catch {
      // no WAL left once the last connection closed
    }
  }
  return total;
};

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
  const saver = SqliteSaver.fromConnString(graphFile);
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
 * LangGraph.js (its SQLite checkpointer, a checkpoint after every super-step) against a durable
 * stagechart run (a commit per step) on the same work, then both in memory (LangGraph's
 * `MemorySaver`), then the bytes each leaves on disk. Ratios are stagechart ÷ LangGraph.
 */
export async function langGraphSideBySide(turns: number, dir: string): Promise<Comparison[]> {
  const workload = langGraphWorkload(turns);
  const pipeline = await pipelineOf(workload);
  const lookup = lookupTool(workload.outputBytes);
  const model = createScriptedModel(scriptOf(workload));
  const saver = SqliteSaver.fromConnString(join(dir, `langgraph-${turns}.db`));
  const opened = SqliteStore.open(join(dir, `stagechart-${turns}.db`));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const label = `3 stages × ${turns} turns, 1 kB tool outputs`;
  // Long runs take seconds on LangGraph: fewer samples, the same for both engines.
  const budget = turns > 20 ? { time: 1000, iterations: 3 } : { time: 2000, iterations: 10 };
  try {
    const durableGraph = langGraphAgent(workload, model, lookup, saver);
    const [graphDurable, engineDurable] = await timeSideBySide(
      { name: "LangGraph SQLite", fn: () => runLangGraph(workload, durableGraph) },
      { name: "stagechart durable", fn: () => runToEnd(pipeline, hostFor(workload), store) },
      budget,
    );
    const memoryGraph = langGraphAgent(workload, model, lookup, new MemorySaver());
    const [graphMemory, engineMemory] = await timeSideBySide(
      { name: "LangGraph in memory", fn: () => runLangGraph(workload, memoryGraph) },
      { name: "stagechart in memory", fn: () => runToEnd(pipeline, hostFor(workload)) },
      budget,
    );
    const bytes = await storedBytes(workload, dir);
    return [
      compare(
        `LangGraph.js durable (${label}), per run`,
        "ms",
        { label: "LangGraph + SqliteSaver", value: graphDurable.medianMs },
        { label: "durable", value: engineDurable.medianMs },
        { langGraphRmePercent: graphDurable.rme, stagechartRmePercent: engineDurable.rme },
        THREE_TIMES_FASTER,
      ),
      compare(
        `LangGraph.js in memory (${label}), per run`,
        "ms",
        { label: "LangGraph + MemorySaver", value: graphMemory.medianMs },
        { label: "in memory", value: engineMemory.medianMs },
        { langGraphRmePercent: graphMemory.rme, stagechartRmePercent: engineMemory.rme },
        THREE_TIMES_FASTER,
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
