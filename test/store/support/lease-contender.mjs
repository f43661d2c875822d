// A second process contending for a run's lease through the real store. Usage:
//   node lease-contender.mjs <db path> <run id> <owner> <ttl ms> <clock ms>…
// tries once per clock reading and prints each result as one JSON line.
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
const { SqliteStore } = await import("../../../src/store/index.ts");

const [path, runId, owner, ttlMs, ...clock] = process.argv.slice(2);
let now = 0;
const opened = SqliteStore.open(path, { now: () => now });
if (!opened.ok) throw opened.error;
for (const reading of clock) {
  now = Number(reading);
  const result = opened.value.acquireLease(runId, owner, Number(ttlMs));
  console.log(JSON.stringify(result.ok ? { ok: true } : { ok: false, error: result.error }));
}
opened.value.close();
