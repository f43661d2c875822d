// A run in a process of its own, for the crash test to SIGKILL. It does what `stagechart run` and
// `stagechart resume` do, through the built package (run `npm run build` first), and also logs
// every model request it makes, so the test can tell whether a recorded reply was asked again.
// The test alternates it with the real `stagechart resume`, which takes over the same run.
//
// `start-killed-at-row` starts the run and SIGKILLs itself the instant its row is inserted, before
// anything else of the run is stored: the earliest moment a crash can leave a run behind.
//
// `resume-killed-at-control` resumes the run and SIGKILLs itself the instant it stores the step that
// applies a control request (one with `ControlRequested`), before anything of that step is stored.
//
// `resume-held` resumes the run but never answers a model request: it prints `H <key>` for the
// first one and holds the run (and its lease) there until stdin closes, so the run is alive for as
// long as the test needs, whatever the machine's load.
//
// `<store>` is a SQLite file, or a `postgres://` URL: the run is then a shared one
// (`startSharedRun`/`resumeSharedRun`), as a worker drives it.
//
//   node crash-child.mjs start|start-killed-at-row|resume|resume-killed-at-control|resume-held <store> <runId> <pipeline.yaml> <script.yaml> <root> <model-log> [approve-id…]
//
// stdout: `E <seq> <type> <stageId>` per audit event, then `R <result json>`.
import { appendFileSync } from "node:fs";
import {
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  openStore,
  resolveModelSpec,
  resumeRun,
  startRun,
} from "../../dist/index.mjs";

const [mode, storeSpec, runId, pipelineFile, scriptFile, root, modelLog, ...approvals] =
  process.argv.slice(2);

const model = await resolveModelSpec(`scripted:${scriptFile}`);
if (!model.ok) throw model.error;
const scripted = model.value.model;
const logged = {
  ...scripted,
  doGenerate: (options) => {
    const call = options.providerOptions.stagechart;
    const key = `model:${runId}/${call.stageExecutionId}/${call.position}`;
    if (mode === "resume-held") return hold(key);
    appendFileSync(modelLog, `${JSON.stringify({ key, at: Date.now() })}\n`);
    return scripted.doGenerate(options);
  },
};
/** Never settles: stdin keeps the process alive, and its end (the test is gone) ends it. */
function hold(key) {
  process.stdout.write(`H ${key}\n`);
  process.stdin.on("end", () => process.exit(2));
  process.stdin.resume();
  return new Promise(() => {});
}
const host = createHost({
  model: { ...model.value, model: logged },
  audit: new MemoryAuditLog(),
  root,
  unansweredGrants: "suspend",
  limits: { providerRetryDelayMs: 600 },
});
const pipeline = await loadPipelineFile(pipelineFile);
if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
const store = await openStore(storeSpec, { postgres: { poolSize: 2 } });
if (!store.ok) throw store.error;
if (mode === "start-killed-at-row") {
  const createRun = store.value.createRun.bind(store.value);
  store.value.createRun = (run) => {
    const created = createRun(run);
    process.kill(process.pid, "SIGKILL");
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // nothing more runs
    return created;
  };
}
if (mode === "resume-killed-at-control") {
  const commitStep = store.value.commitStep.bind(store.value);
  store.value.commitStep = (id, step) => {
    if (step.events.some((event) => event.type === "ControlRequested")) {
      process.kill(process.pid, "SIGKILL");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // nothing more runs
    }
    return commitStep(id, step);
  };
}
const handle = mode.startsWith("start")
  ? await startRun(pipeline.value, {
      host,
      store: store.value,
      runId,
      task: "survive crashes",
      // What `stagechart resume` needs to take the run over, as `stagechart run` stores it.
      resumeWith: {
        pipelineFile,
        model: `scripted:${scriptFile}`,
        root,
        mode: "ask",
        headless: true,
        onGrant: "suspend",
      },
    })
  : await resumeRun(pipeline.value, runId, {
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
