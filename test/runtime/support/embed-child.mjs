// An app of its own that invokes a bundled pipeline as its child `work`, on a host with a store,
// through the built package (run `npm run build` first), as an outside developer's app would.
// It saves its persisted snapshot synchronously from its audit listener, at every event; given a
// cut, it SIGKILLs itself the instant it has saved at that event. Started again with the same
// files, it restores the last snapshot it saved and goes on. Usage:
//   node embed-child.mjs <state.json> <store.db> <root> <pipeline.yaml> <script.yaml> [<Type>[:<stage>]]
// stdout: `E <type> <stageId>` per event, then `R <json>` with the app's end state.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { assign, createActor, setup, toPromise } from "xstate";
import {
  compilePipeline,
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  resolveModelSpec,
  SqliteStore,
} from "../../../dist/index.mjs";

const [stateFile, storeFile, root, pipelineFile, scriptFile, cut] = process.argv.slice(2);
const [cutType, cutStage] = (cut ?? "").split(":");

const pipeline = await loadPipelineFile(pipelineFile);
if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
const model = await resolveModelSpec(`scripted:${scriptFile}`);
if (!model.ok) throw model.error;
const store = SqliteStore.open(storeFile);
if (!store.ok) throw store.error;
const audit = new MemoryAuditLog();
const host = createHost({ model: model.value, audit, root, store: store.value });

const app = setup({ actors: { work: compilePipeline(pipeline.value, host) } }).createMachine({
  id: "app",
  context: {},
  initial: "working",
  states: {
    working: {
      invoke: {
        id: "work",
        src: "work",
        input: { runId: "embedded-1", ctx: { task: "rename auth" } },
        onDone: {
          target: "finished",
          actions: assign({ status: ({ event }) => event.output.status }),
        },
        onError: {
          target: "broken",
          actions: assign({ problem: ({ event }) => String(event.error) }),
        },
      },
    },
    finished: { type: "final" },
    broken: { type: "final" },
  },
});

const saved = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : undefined;
const actor = createActor(app, saved && { snapshot: saved });
audit.subscribe((event) => {
  writeFileSync(stateFile, JSON.stringify(actor.getPersistedSnapshot()));
  process.stdout.write(`E ${event.type} ${event.stageId ?? ""}\n`);
  if (event.type === cutType && (cutStage === undefined || event.stageId === cutStage)) {
    process.kill(process.pid, "SIGKILL");
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // nothing more runs
  }
});
actor.start();
await toPromise(actor);
const { value, context } = actor.getSnapshot();
process.stdout.write(`R ${JSON.stringify({ app: value, ...context })}\n`);
store.value.close();
