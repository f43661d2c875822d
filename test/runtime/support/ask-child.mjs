// A durable run of an ask pipeline in a process of its own, asking a person who never answers
// (a terminal prompt left open), for the test to SIGKILL while it asks. Usage:
//   node ask-child.mjs <store> <pipeline.yaml> <script.yaml> <root> <runId>…
// starts one run per id and prints `asking` once every run's question is committed to the store.
import { register } from "node:module";

register("../../store/support/ts-hooks.mjs", import.meta.url);
const { createHost, loadPipelineFile, MemoryAuditLog, resolveModelSpec, SqliteStore, startRun } =
  await import("../../../src/index.ts");

const [storeFile, pipelineFile, scriptFile, root, ...runIds] = process.argv.slice(2);
const model = await resolveModelSpec(`scripted:${scriptFile}`);
if (!model.ok) throw model.error;
const host = createHost({
  model: model.value,
  audit: new MemoryAuditLog(),
  root,
  interactors: [{ name: "terminal", askValue: () => new Promise(() => undefined) }],
});
const pipeline = await loadPipelineFile(pipelineFile);
if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
const store = SqliteStore.open(storeFile);
if (!store.ok) throw store.error;
for (const runId of runIds) {
  const started = await startRun(pipeline.value, { host, store: store.value, runId });
  if (!started.ok) throw started.error;
}
const asked = () =>
  runIds.every((runId) =>
    store.value.auditOf(runId).some((event) => event.type === "InputRequested"),
  );
const poll = setInterval(() => {
  if (!asked()) return;
  clearInterval(poll);
  console.log("asking");
}, 10);
