// A run on the shared PostgreSQL store in a process of its own, for the crash test to SIGKILL:
// `crash-child.mjs` (test/support) on `startSharedRun`/`resumeSharedRun`, through the built
// package (run `npm run build` first). Logs every model request it makes, so the test can tell
// whether a reply already stored was asked again.
//
//   node shared-crash-child.mjs start|resume <store url> <runId> <pipeline.yaml> <script.yaml> <root> <model-log> [approve-id…]
//
// stdout: `E <seq> <type> <stageId>` per audit event, then `R <result json>`.
import { appendFileSync } from "node:fs";
import {
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  PostgresStore,
  resolveModelSpec,
  resumeSharedRun,
  startSharedRun,
} from "../../../../dist/index.js";

const [mode, url, runId, pipelineFile, scriptFile, root, modelLog, ...approvals] =
  process.argv.slice(2);

const model = await resolveModelSpec(`scripted:${scriptFile}`);
if (!model.ok) throw model.error;
const scripted = model.value.model;
const logged = {
  ...scripted,
  doGenerate: (options) => {
    const call = options.providerOptions.stagechart;
    const key = `model:${runId}/${call.stageExecutionId}/${call.position}`;
    appendFileSync(modelLog, `${JSON.stringify({ key, at: Date.now() })}\n`);
    return scripted.doGenerate(options);
  },
};
const host = createHost({
  model: { ...model.value, model: logged },
  audit: new MemoryAuditLog(),
  root,
  unansweredGrants: "suspend",
  limits: { providerRetryDelayMs: 600 },
});
const pipeline = await loadPipelineFile(pipelineFile);
if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
const store = await PostgresStore.open(url, { poolSize: 2 });
if (!store.ok) throw store.error;
const handle =
  mode === "start"
    ? await startSharedRun(pipeline.value, {
        host,
        store: store.value,
        runId,
        task: "survive crashes",
      })
    : await resumeSharedRun(pipeline.value, runId, {
        host,
        store: store.value,
        answers: approvals.map((proposalId) => ({ proposalId, decision: "approve" })),
      });
if (!handle.ok) {
  process.stdout.write(`R ${JSON.stringify({ status: "refused", error: handle.error.code })}\n`);
  process.exit(1);
}
for await (const event of handle.value.events())
  process.stdout.write(`E ${event.seq} ${event.type} ${event.stageId ?? "-"}\n`);
const result = await handle.value.result;
process.stdout.write(`R ${JSON.stringify(result)}\n`);
await store.value.close();
process.exit(result.status === "done" ? 0 : 3);
