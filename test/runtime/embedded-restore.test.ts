import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { assign, createActor, setup, toPromise } from "xstate";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { MemoryAuditLog } from "../../src/events/audit.js";
import { resolveModelSpec } from "../../src/models/index.js";
import { createHost } from "../../src/runtime/host.js";
import { compilePipeline } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { demoProject, REPO_ROOT } from "../support/cli.js";

// The child imports the built package (dist/): `npm run build` first.
const CHILD = fileURLToPath(new URL("./support/embed-child.mjs", import.meta.url));
const bundled = (name: string) => ({
  pipeline: join(REPO_ROOT, `machines/${name}.yaml`),
  script: join(REPO_ROOT, `machines/${name}.script.yaml`),
});

/** The embedding app in a process of its own; its exit code or signal, and its stdout. */
async function appProcess(project: string, name: string, cut?: string) {
  const { pipeline, script } = bundled(name);
  const child = spawn(
    process.execPath,
    [CHILD, join(project, "app.json"), join(project, "runs.db"), project, pipeline, script].concat(
      cut ? [cut] : [],
    ),
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let stdout = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  const [code, signal] = await once(child, "exit");
  return { code, signal, stdout };
}

const openStore = (file: string): SqliteStore => {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
};

/** The app's end state, from the line the restored process prints last. */
const endOf = (stdout: string) =>
  JSON.parse(
    stdout
      .split("\n")
      .find((line) => line.startsWith("R "))
      ?.slice(2) ?? "null",
  );

type Saved = { children: Record<string, { snapshot: Saved }>; value: unknown; status: string };

describe("an app that persists its snapshot from its audit listener, in the middle of a step", () => {
  // Each cut is an audit event the app saved at, synchronously, and was killed right after. At
  // all but ToolSucceeded (told inside the tool call) the run's actors were inside a transition
  // then: one taking a settled child's event, the child settled and the machine not yet moved.
  const cuts: [string, string][] = [
    ["code-review", "StageSetup:plan"],
    ["code-review", "StageExited:plan"],
    ["code-review", "SMTransition"],
    ["code-review", "ToolSucceeded:execute"],
    ["code-review", "RunCompleted"],
    ["code-review-parallel", "StageExited:lint"],
  ];

  it.concurrent.each(cuts)(
    "%s killed at %s: a new process restores it and the run ends done",
    async (name, cut) => {
      const project = demoProject();
      const first = await appProcess(project, name, cut);
      expect(first.signal).toBe("SIGKILL");

      const second = await appProcess(project, name);
      expect(second.code, second.stdout).toBe(0);
      expect(endOf(second.stdout)).toMatchObject({ app: "finished", status: "done" });
      const store = openStore(join(project, "runs.db"));
      expect(store.getRun("embedded-1")).toMatchObject({ ok: true, value: { status: "done" } });
      const types = store.auditOf("embedded-1").map((e) => e.type);
      expect(types.filter((type) => type === "RunStarted")).toHaveLength(1);
      expect(types.at(-1)).toBe("RunCompleted");
      store.close();
    },
  );

  it("the snapshot saved at a stage's StageSetup holds the stage in setup with its entry already done", async () => {
    const project = demoProject();
    await appProcess(project, "code-review", "StageSetup:plan");
    const saved = JSON.parse(readFileSync(join(project, "app.json"), "utf8")) as Saved;
    const plan = saved.children.work?.snapshot.children.plan?.snapshot as Saved;
    expect(plan.value).toBe("setup");
    expect(Object.values(plan.children).map((child) => child.snapshot.status)).toEqual(["done"]);

    const second = await appProcess(project, "code-review");
    expect(endOf(second.stdout)).toMatchObject({ app: "finished", status: "done" });
  });
});

describe("a snapshot taken at any audit event of a run", () => {
  it("restores into a run that ends done, at every event of code-review-parallel", async () => {
    const { pipeline: file, script } = bundled("code-review-parallel");
    const pipeline = await loadPipelineFile(file);
    if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
    const model = await resolveModelSpec(`scripted:${script}`);
    if (!model.ok) throw model.error;
    const appOf = (host: ReturnType<typeof createHost>) =>
      setup({ actors: { work: compilePipeline(pipeline.value, host) } }).createMachine({
        context: {} as { status?: string },
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
            },
          },
          finished: { type: "final" },
        },
      });

    /** Runs the app to its end on a fresh project and store, saving its snapshot at event `at`. */
    const runTo = async (at: number) => {
      const project = demoProject();
      const store = join(project, "runs.db");
      const audit = new MemoryAuditLog();
      const host = createHost({
        model: model.value,
        audit,
        root: project,
        store: openStore(store),
      });
      const app = createActor(appOf(host));
      let saved: unknown;
      audit.subscribe(() => {
        if (audit.events.length === at) saved = app.getPersistedSnapshot();
      });
      app.start();
      await toPromise(app);
      return { saved, events: audit.events.length, project, store };
    };

    const whole = await runTo(0);
    expect(whole.events).toBeGreaterThan(40);
    for (let at = 1; at <= whole.events; at++) {
      const { saved, project, store } = await runTo(at);
      const host = createHost({
        model: model.value,
        audit: new MemoryAuditLog(),
        root: project,
        store: openStore(store),
      });
      const restored = createActor(appOf(host), { snapshot: saved as never });
      restored.start();
      const ended = await Promise.race([
        toPromise(restored).then(() => restored.getSnapshot().context.status),
        new Promise((resolve) => setTimeout(() => resolve(`stalled at event ${at}`), 2000)),
      ]);
      expect(ended).toBe("done");
    }
  }, 60_000);
});
