import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { Interactor } from "../../src/compiler/interactor.js";
import { loadPipelineFile } from "../../src/definitions/index.js";
import type { PipelineDefinition, PipelineStage } from "../../src/definitions/pipeline-types.js";
import { askMachineFor } from "../../src/runtime/ask-stages.js";
import { type RunHandle, resumeRun, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { code, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

const DECISION = {
  type: "object",
  required: ["approved"],
  properties: { approved: { type: "boolean" }, note: { type: "string" } },
  additionalProperties: false,
};

const ask = (id: string): PipelineStage => ({
  kind: "ask",
  id,
  prompt: "Ship it?",
  schema: DECISION,
});

/** prepare, then a person decides; ship only when the answer approves. */
const decision = (): PipelineDefinition =>
  pipelineOf({
    id: "decision",
    stages: [
      code("prepare", () => ({ verdict: "ok", output: { ready: true } })),
      ask("decide"),
      code("ship", ({ ctx }) => ({
        verdict: "ok",
        output: { shipped: ctx.upstream[0]?.output ?? null },
      })),
    ],
    next: {
      prepare: "decide",
      decide: {
        kind: "rules",
        rules: [
          { when: { path: "output.approved", op: "equals", value: true }, to: "ship" },
          { to: "fail" },
        ],
      },
    },
  });

function openStore(file: string): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

function handleOf(started: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!started.ok) throw started.error;
  return started.value;
}

/** A durable run of the decision pipeline, left suspended at its ask stage. */
async function suspendedAtAsk() {
  const file = join(tempDir(), "runs.db");
  const first = handleOf(
    await startRun(decision(), {
      host: harness("stages: {}").host,
      store: openStore(file),
      runId: "a1",
    }),
  );
  const result = await first.result;
  return { file, result };
}

/** An interactor that answers value questions with `answers`, in order, and records what it was asked. */
function answering(...answers: unknown[]) {
  const asked: { prompt: string; problems?: string[] }[] = [];
  const interactor: Interactor = {
    name: "tester",
    requestGrant: async () => "deny",
    askValue: async (request) => {
      asked.push({
        prompt: request.prompt,
        ...(request.problems && { problems: request.problems }),
      });
      return answers.shift() as never;
    },
  };
  return { interactor, asked };
}

describe("an ask stage", () => {
  it("suspends the run, waiting for an answer with the prompt, audited as asked", async () => {
    const { file, result } = await suspendedAtAsk();
    expect(result.status).toBe("suspended");
    expect(result.waiting).toEqual([
      {
        kind: "input",
        stageId: "decide",
        stageExecutionId: "a1/decide/1",
        prompt: "Ship it?",
        schema: DECISION,
      },
    ]);
    const store = openStore(file);
    expect(store.getRun("a1")).toMatchObject({ ok: true, value: { status: "suspended" } });
    expect(store.auditOf("a1").find((e) => e.type === "InputRequested")).toMatchObject({
      stageId: "decide",
      stageExecutionId: "a1/decide/1",
      payload: { prompt: "Ship it?", schema: DECISION },
    });
  });

  it("resumed with a valid answer goes on: the value is its output and the rules see it", async () => {
    const { file } = await suspendedAtAsk();
    const store = openStore(file);
    const resumed = await resumeRun(decision(), "a1", {
      host: harness("stages: {}").host,
      store,
      inputs: [{ value: { approved: true, note: "ok" }, by: "alice" }],
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("done");
    expect(result.results.decide?.output).toEqual({ approved: true, note: "ok" });
    expect(result.output).toEqual({ shipped: { approved: true, note: "ok" } });
    expect(store.auditOf("a1").find((e) => e.type === "InputAnswered")).toMatchObject({
      stageId: "decide",
      payload: { value: { approved: true, note: "ok" }, by: "alice" },
    });
  });

  it("takes the other rule for another answer", async () => {
    const { file } = await suspendedAtAsk();
    const resumed = await resumeRun(decision(), "a1", {
      host: harness("stages: {}").host,
      store: openStore(file),
      inputs: [{ value: { approved: false } }],
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("failed");
    expect(result.results.ship).toBeUndefined();
  });

  it("refuses an answer its schema rejects: nothing runs, the run stays suspended, the refusal is audited", async () => {
    const { file } = await suspendedAtAsk();
    const store = openStore(file);
    const before = store.auditOf("a1").length;
    const refused = await resumeRun(decision(), "a1", {
      host: harness("stages: {}").host,
      store,
      inputs: [{ value: { approved: "yes" } }],
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Validation/InputInvalid");
    expect(refused.ok ? "" : refused.error.message).toContain("/approved must be boolean");
    expect(store.getRun("a1")).toMatchObject({ ok: true, value: { status: "suspended" } });
    const after = store.auditOf("a1");
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)).toMatchObject({
      type: "RequestRefused",
      payload: { error: { code: "Validation/InputInvalid" } },
    });

    const resumed = await resumeRun(decision(), "a1", {
      host: harness("stages: {}").host,
      store,
      inputs: [{ value: { approved: true } }],
    });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
  });

  it("refuses an answer when the run waits for none", async () => {
    const file = join(tempDir(), "runs.db");
    const pipeline = pipelineOf({
      stages: [code("a", () => ({ verdict: "ok" })), code("b", () => new Promise(() => undefined))],
      next: { a: "b" },
    });
    const first = handleOf(
      await startRun(pipeline, {
        host: harness("stages: {}").host,
        store: openStore(file),
        runId: "n1",
      }),
    );
    await waitFor(liveActor(first), (s) => s.context.current === "b");
    first.stop();
    await first.result;
    const refused = await resumeRun(pipeline, "n1", {
      host: harness("stages: {}").host,
      store: openStore(file),
      inputs: [{ value: 1 }],
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/NoPendingInput");
  });

  it("asks an interactor that takes values, again while its answer is invalid, and goes on", async () => {
    const { interactor, asked } = answering({ approved: "maybe" }, { approved: true });
    const handle = handleOf(
      await startRun(decision(), {
        host: harness("stages: {}", { interactors: [interactor] }).host,
        runId: "live",
      }),
    );
    const result = await handle.result;
    expect(result.status).toBe("done");
    expect(asked).toEqual([
      { prompt: "Ship it?" },
      { prompt: "Ship it?", problems: ["/approved must be boolean"] },
    ]);
    expect(result.results.decide?.output).toEqual({ approved: true });
  });

  it("with nobody to ask and no store, suspends all the same", async () => {
    const handle = handleOf(await startRun(decision(), { host: harness("stages: {}").host }));
    const result = await handle.result;
    expect(result.status).toBe("suspended");
    expect(result.waiting?.[0]).toMatchObject({ kind: "input", stageId: "decide" });
  });
});

const ASK_CHILD = fileURLToPath(new URL("./support/ask-child.mjs", import.meta.url));

/** Runs the ask child until its question is committed, then SIGKILLs it: the prompt was open. */
function killedWhileAsking(dir: string, ...runIds: string[]): Promise<void> {
  const args = [
    ASK_CHILD,
    join(dir, "runs.db"),
    join(dir, "asking.yaml"),
    join(dir, "asking.script.yaml"),
    dir,
    ...runIds,
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line === "asking") child.kill("SIGKILL");
  });
  return new Promise((done) => child.on("close", () => done()));
}

describe("an ask stage whose process was killed while it asked", () => {
  // One process asks for two runs (k1, k2), and is killed while both questions are open.
  const dir = tempDir();
  beforeAll(async () => {
    writeFileSync(
      join(dir, "asking.yaml"),
      `id: asking
entry: decide
stages:
  decide: { ask: { prompt: "Ship it?", schema: { type: object, required: [approved], properties: { approved: { type: boolean } } } } }
next:
  decide:
    - { when: { path: output.approved, equals: true }, to: done }
    - { to: fail }
`,
    );
    writeFileSync(join(dir, "asking.script.yaml"), "stages: {}\n");
    await killedWhileAsking(dir, "k1", "k2");
  }, 60_000);

  it("takes the answer on resume and finishes, asked once", async () => {
    const store = openStore(join(dir, "runs.db"));
    expect(store.getRun("k1")).toMatchObject({ ok: true, value: { status: "running" } });
    const pipeline = await loadPipelineFile(join(dir, "asking.yaml"));
    if (!pipeline.ok) throw new Error("the pipeline does not load");
    const resumed = await resumeRun(pipeline.value, "k1", {
      host: harness("stages: {}").host,
      store,
      inputs: [{ value: { approved: true }, by: "bob" }],
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("done");
    const audit = store.auditOf("k1");
    expect(audit.filter((e) => e.type === "InputRequested")).toHaveLength(1);
    expect(audit.find((e) => e.type === "InputAnswered")?.payload).toEqual({
      value: { approved: true },
      by: "bob",
    });
    expect(audit.map((e) => e.seq)).toEqual(audit.map((_, i) => i + 1));
  });

  it("resumed without an answer and nobody to ask, suspends waiting for it", async () => {
    const pipeline = await loadPipelineFile(join(dir, "asking.yaml"));
    if (!pipeline.ok) throw new Error("the pipeline does not load");
    const resumed = await resumeRun(pipeline.value, "k2", {
      host: harness("stages: {}").host,
      store: openStore(join(dir, "runs.db")),
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("suspended");
    expect(result.waiting).toMatchObject([{ kind: "input", stageId: "decide" }]);
  });
});

describe("the ask machine a run is compiled with", () => {
  const withAsk = () => pipelineOf({ id: "asks", stages: [ask("decide")] });
  const nested = () =>
    pipelineOf({
      id: "outer",
      stages: [{ kind: "pipeline", id: "inner", pipeline: withAsk() }],
    });
  const withoutAsk = () =>
    pipelineOf({ id: "codes", stages: [code("only", async () => ({ verdict: "ok" }))] });

  it("is built for each host only when a stage of the pipeline, or of one it runs, asks", () => {
    const first = harness("stages: {}").host;
    const second = harness("stages: {}").host;

    expect(askMachineFor(first, withAsk())).not.toBe(askMachineFor(second, withAsk()));
    expect(askMachineFor(first, nested())).not.toBe(askMachineFor(second, nested()));
    expect(askMachineFor(first, withoutAsk())).toBe(askMachineFor(second, withoutAsk()));
  });
});
