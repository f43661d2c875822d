import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** The store's calls that write, each in a transaction of its own. */
const WRITES = new Set([
  "createRun",
  "updateRun",
  "commitStep",
  "acquireLease",
  "renewLease",
  "releaseLease",
  "record",
  "put",
  "remember",
  "saveDefinition",
]);
/** Writes a run makes once, as it starts and as it ends, whatever its number of steps. */
const RUN_BOUNDS = new Set(["createRun", "acquireLease", "updateRun", "releaseLease"]);

/**
 * One transaction per step, journal and transcripts included: the store's write
 * calls during one durable run, counted on their way in, against the steps it committed.
 */
export async function transactionsPerStep(workload: Workload, dir: string): Promise<Comparison> {
  const opened = SqliteStore.open(join(dir, "transactions.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const writes = new Map<string, number>();
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof name !== "string" || typeof value !== "function" || !WRITES.has(name))
        return value;
      return (...args: unknown[]) => {
        writes.set(name, (writes.get(name) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
  try {
    await runToEnd(await pipelineOf(workload), hostFor(workload), counted);
    const steps = writes.get("commitStep") ?? 0;
    const during = [...writes].filter(([name]) => !RUN_BOUNDS.has(name));
    const transactions = during.reduce((sum, [, count]) => sum + count, 0);
    return compare(
      `store transactions per committed step (${workload.stages} stages × ${workload.turns} turns, durable)`,
      "transactions",
      { label: "committed steps", value: steps },
      { label: "write transactions", value: transactions },
      Object.fromEntries([...writes].map(([name, count]) => [`${name}Calls`, count])),
    );
  } finally {
    store.close();
  }
}
