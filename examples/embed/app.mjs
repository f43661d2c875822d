// An XState app of its own that invokes a bundled stagechart pipeline (code-review) as a child,
// saves itself when it is told to stop, and carries on in a new process where it stopped.
//
//   npm run build                                   # the app imports the built package
//   node examples/embed/app.mjs --exit-after plan   # saves itself once Plan is done, and exits
//   node examples/embed/app.mjs                     # restores itself and finishes the review
//
// Options: --state <file> (the app's saved snapshot; .stagechart/embed-app.json), --store <file>
// (the run store; .stagechart/runs.db), --root <dir> (the project the pipeline works on;
// examples/auth-service), --model <spec> (the code-review scripted model unless given),
// --exit-after <stage>. SIGTERM or Ctrl-C also make the app save itself and exit.
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  compilePipeline,
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  resolveModelSpec,
  SqliteStore,
} from "stagechart";
import { assign, createActor, setup, toPromise } from "xstate";

const bundled = (path) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

const { values: options } = parseArgs({
  options: {
    state: { type: "string", default: ".stagechart/embed-app.json" },
    store: { type: "string", default: ".stagechart/runs.db" },
    root: { type: "string", default: bundled("examples/auth-service") },
    model: { type: "string", default: `scripted:${bundled("machines/code-review.script.yaml")}` },
    "exit-after": { type: "string" },
  },
});

const failWith = (message) => {
  console.error(message);
  process.exit(1);
};
const pipeline = await loadPipelineFile(bundled("machines/code-review.yaml"));
if (!pipeline.ok) failWith(pipeline.diagnostics.map((d) => d.message).join("\n"));
const model = await resolveModelSpec(options.model);
if (!model.ok) failWith(model.error.message);
const store = SqliteStore.open(options.store);
if (!store.ok) failWith(store.error.message);

// A host with a store: the pipeline's run is durable wherever it runs, here as the app's child.
const audit = new MemoryAuditLog();
const host = createHost({ model: model.value, audit, root: options.root, store: store.value });

const app = setup({
  types: {},
  actors: { review: compilePipeline(pipeline.value, host) },
}).createMachine({
  id: "release-app",
  context: () => ({ runId: `release-${randomUUID().slice(0, 8)}`, task: "rename auth" }),
  initial: "reviewing",
  states: {
    reviewing: {
      invoke: {
        id: "review",
        src: "review",
        input: ({ context }) => ({ runId: context.runId, ctx: { task: context.task } }),
        onDone: { target: "released", actions: assign({ review: ({ event }) => event.output }) },
        onError: { target: "blocked", actions: assign({ problem: ({ event }) => event.error }) },
      },
    },
    released: { type: "final" },
    blocked: { type: "final" },
  },
});

const saved = existsSync(options.state)
  ? JSON.parse(readFileSync(options.state, "utf8"))
  : undefined;
const actor = createActor(app, saved && { snapshot: saved });

/** The app saves its own snapshot (its child's inside it) and exits; the next start goes on. */
function saveAndExit() {
  mkdirSync(dirname(options.state), { recursive: true });
  writeFileSync(options.state, JSON.stringify(actor.getPersistedSnapshot()));
  console.log(`saved ${options.state}`);
  process.exit(0);
}
process.once("SIGTERM", saveAndExit);
process.once("SIGINT", saveAndExit);
audit.subscribe((event) => {
  console.log(`${event.type}${event.stageId ? ` ${event.stageId}` : ""}`);
  // Saved right here, in the middle of the step that exits the stage: that snapshot restores too.
  if (event.type === "StageExited" && event.stageId === options["exit-after"]) saveAndExit();
});

console.log(saved ? `restored ${options.state}` : "started");
actor.start();
await toPromise(actor);
const { value, context } = actor.getSnapshot();
rmSync(options.state, { force: true });
console.log(JSON.stringify({ app: value, runId: context.runId, review: context.review?.status }));
store.value.close();
