import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HistoryStep } from "../../src/runtime/run-history.js";
import { SqliteStore } from "../../src/store/index.js";
import { DECIDING } from "../support/ask-pipelines.js";
import {
  type CliRun,
  demoProject,
  REPO_ROOT,
  runCli,
  storeCommand,
  storeOf,
  summaryOf,
} from "../support/cli.js";
import { noPostgres, testPostgres } from "../support/postgres.js";
import { tempDir } from "../support/stages.js";

type Event = { seq: number; type: string; stageId?: string; payload: Record<string, unknown> };

const postgres = testPostgres();
afterEach(() => {
  delete process.env.XDG_CACHE_HOME;
});

/**
 * A store of one kind for a fresh demo project: its `--store` argument, a statement run on it
 * behind the CLI's back, and what no output may contain (the PostgreSQL URL's password).
 */
interface CliStore {
  project: string;
  spec: string;
  sql(text: string): Promise<void>;
  secret?: string;
}

const STORES: { name: string; skip: boolean; fresh(): Promise<CliStore> }[] = [
  {
    name: "a SQLite store",
    skip: false,
    async fresh() {
      const project = demoProject();
      const spec = storeOf(project);
      return {
        project,
        spec,
        sql: async (text) => {
          const db = new Database(spec);
          db.prepare(text).run();
          db.close();
        },
      };
    },
  },
  {
    name: "a PostgreSQL store",
    skip: noPostgres,
    async fresh() {
      const spec = await postgres().createDatabase();
      return {
        project: demoProject(),
        spec,
        secret: postgres().password,
        sql: async (text) => {
          const client = new pg.Client({ connectionString: spec });
          await client.connect();
          await client.query(text).finally(() => client.end());
        },
      };
    },
  },
];

describe.each(STORES)("stagechart fork on $name", ({ skip, fresh }) => {
  /**
   * A finished code-review run `r1` (of the bundled pipeline, or of a copy in the project when
   * `copied`), and the CLI on its store, every output checked for secrets.
   */
  async function finishedRun({ copied = false } = {}) {
    const store = await fresh();
    const pipeline = copied ? pipelineCopyIn(store.project) : "code-review";
    const outputs: CliRun[] = [];
    const cli = async (...argv: string[]) => {
      const run = await runCli(...argv, "--store", store.spec);
      outputs.push(run);
      return run;
    };
    const run = await cli(
      ...["run", pipeline, "--task", "refactor auth module", "--root", store.project],
      ...["--headless", "--run-id", "r1", "--json"],
    );
    expect(run.code).toBe(0);
    const auditOf = async (runId: string): Promise<Event[]> =>
      JSON.parse((await cli("audit", runId, "--json")).stdout);
    const historyOf = async (runId: string): Promise<HistoryStep[]> =>
      JSON.parse((await cli("history", runId, "--json")).stdout);
    const nothingSecret = () => {
      const { secret } = store;
      if (!secret) return;
      for (const { stdout, stderr } of outputs) expect(`${stdout}${stderr}`).not.toContain(secret);
    };
    return { ...store, pipeline, cli, auditOf, historyOf, nothingSecret };
  }

  it.skipIf(skip)(
    "starts a new run from a step that finishes from there, leaving the source as it was",
    async () => {
      const { cli, auditOf, historyOf, nothingSecret } = await finishedRun();
      const sourceAudit = await auditOf("r1");
      const at = (await historyOf("r1")).find((s) =>
        s.transitions.includes("execute → review (sequential)"),
      );
      if (!at) throw new Error("no step enters review");
      const fork = await cli(
        ...["fork", "r1", "--at", String(at.step), "--run-id", "f1"],
        ...["--set", "task=review it again", "--headless", "--json"],
      );
      expect(fork.code).toBe(0);
      expect(summaryOf(fork.stdout)).toMatchObject({ runId: "f1", status: "done" });

      const audit = await auditOf("f1");
      expect(audit[0]).toMatchObject({
        seq: 1,
        type: "RunForked",
        payload: { from: { runId: "r1", step: at.step }, set: { task: "review it again" } },
      });
      expect(audit[1]?.type).toBe("RunResumed");
      expect(audit.filter((e) => e.type === "StageExited").map((e) => e.stageId)).toEqual([
        "review",
      ]);
      // The source's plan and execute replies were copied: the fork made only review's calls.
      const turns = (events: Event[], stageId: string) =>
        events.filter((e) => e.type === "ModelTurn" && e.stageId === stageId).length;
      expect(turns(audit, "review")).toBe(turns(sourceAudit, "review"));
      expect(turns(audit, "execute")).toBe(0);
      expect(await auditOf("r1")).toEqual(sourceAudit);
      const runs = JSON.parse((await cli("runs", "--json")).stdout);
      expect(runs).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ runId: "r1", status: "done" }),
          expect.objectContaining({ runId: "f1", status: "done" }),
        ]),
      );
      nothingSecret();
    },
  );

  it.skipIf(skip)(
    "refuses, exit 1 with the same codes on either store, a run that is not there, a step it does not have and a step with no fork marks",
    async () => {
      const { cli, sql, nothingSecret } = await finishedRun();
      const codeOf = async (...argv: string[]) => {
        const refused = await cli("fork", ...argv, "--headless", "--json");
        expect(refused.code).toBe(1);
        return summaryOf(refused.stdout).error.code;
      };
      expect(await codeOf("nope", "--at", "1")).toBe("Session/RunNotFound");
      expect(await codeOf("r1", "--at", "999")).toBe("Validation/ForkStepUnknown");
      expect(await codeOf("r1", "--at", "1", "--run-id", "r1")).toBe("Session/RunExists");
      await sql("UPDATE steps SET journal_mark = NULL, transcript_mark = NULL WHERE step = 1");
      expect(await codeOf("r1", "--at", "1", "--run-id", "f9")).toBe("Session/ForkUnavailable");
      expect(JSON.parse((await cli("runs", "--json")).stdout)).toEqual([
        expect.objectContaining({ runId: "r1" }),
      ]);
      nothingSecret();
    },
  );

  it.skipIf(skip)(
    "with --detach, queues the fork with its definition, and a worker runs it to done",
    async () => {
      const { cli, auditOf, historyOf, nothingSecret } = await finishedRun();
      const at = (await historyOf("r1")).find((s) => s.state === "review");
      if (!at) throw new Error("no step in review");
      const detached = await cli(
        ...["fork", "r1", "--at", String(at.step), "--run-id", "f2", "--detach", "--json"],
      );
      expect(detached.code).toBe(0);
      expect(summaryOf(detached.stdout)).toMatchObject({
        runId: "f2",
        status: "queued",
        from: { runId: "r1", step: at.step },
      });
      expect(JSON.parse((await cli("show", "f2", "--json")).stdout)).toMatchObject({
        status: "queued",
      });

      // A worker of its own, as on another machine, writes the stored definition out and runs it.
      process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), "stagechart-worker-cache-"));
      const worker = await cli("worker", "--until-idle");
      expect(worker.code).toBe(0);
      expect(worker.stdout).toBe("started f2\ndone f2\n");
      const audit = await auditOf("f2");
      expect(audit.slice(0, 2).map((e) => e.type)).toEqual(["RunForked", "RunResumed"]);
      expect(audit.filter((e) => e.type === "StageExited").map((e) => e.stageId)).toEqual([
        "review",
      ]);
      nothingSecret();
    },
  );

  it.skipIf(skip)(
    "refuses answers the fork does not wait for, exit 1, storing nothing a worker could run",
    async () => {
      const { cli, historyOf, nothingSecret } = await finishedRun();
      const at = (await historyOf("r1")).find((s) => s.state === "review");
      if (!at) throw new Error("no step in review");
      const refusals = [
        { answer: ["--approve", "bogus"], code: "Session/NoPendingGrant" },
        { answer: ["--deny", "bogus"], code: "Session/NoPendingGrant" },
        { answer: ["--input", '"yes"'], code: "Session/NoPendingInput" },
      ];
      for (const { answer, code } of refusals) {
        const refused = await cli(
          ...["fork", "r1", "--at", String(at.step), "--run-id", "f1"],
          ...[...answer, "--headless", "--json"],
        );
        expect(refused.code).toBe(1);
        expect(summaryOf(refused.stdout)).toMatchObject({ error: { code } });
      }
      const shown = await cli("show", "f1", "--json");
      expect(summaryOf(shown.stdout)).toMatchObject({ error: { code: "Session/RunNotFound" } });

      // A worker that would take even a lease-less running run at once finds nothing to run.
      process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), "stagechart-worker-cache-"));
      const worker = await cli("worker", "--until-idle", "--lease-ttl", "1");
      expect(worker.code).toBe(0);
      expect(worker.stdout).toBe("");
      nothingSecret();
    },
  );

  it.skipIf(skip)(
    "refuses a fork of a pipeline changed since without --force before storing anything",
    async () => {
      const { cli, project, nothingSecret } = await finishedRun({ copied: true });
      const review = join(project, "stages/review.md");
      writeFileSync(review, `${readFileSync(review, "utf8")}\nLook twice.\n`);
      const refused = await cli(
        "fork",
        "r1",
        "--at",
        "1",
        "--run-id",
        "f1",
        "--headless",
        "--json",
      );
      expect(refused.code).toBe(1);
      expect(summaryOf(refused.stdout)).toMatchObject({
        error: { code: "Session/DefinitionDrift" },
      });
      const shown = await cli("show", "f1", "--json");
      expect(summaryOf(shown.stdout)).toMatchObject({ error: { code: "Session/RunNotFound" } });
      nothingSecret();
    },
  );

  it.skipIf(skip)(
    "with --detach, queues from the stored definition a fork whose pipeline file is gone, and a worker runs it",
    async () => {
      const { cli, project, historyOf, nothingSecret } = await finishedRun({ copied: true });
      const at = (await historyOf("r1")).find((s) => s.state === "review");
      if (!at) throw new Error("no step in review");
      // Forks run on a model of their own, kept: the script beside the pipeline goes with it.
      const script = join(project, "fork.script.yaml");
      copyFileSync(join(project, "machines/code-review.script.yaml"), script);
      const detach = (runId: string) =>
        cli(
          ...["fork", "r1", "--at", String(at.step), "--run-id", runId, "--detach", "--json"],
          ...["--model", `scripted:${script}`],
        );
      // A first fork stores the definition, as `run --detach` does; then the files are moved away.
      expect((await detach("f1")).code).toBe(0);
      for (const dir of ["machines", "stages"]) rmSync(join(project, dir), { recursive: true });
      const detached = await detach("f2");
      expect(detached.code).toBe(0);
      expect(summaryOf(detached.stdout)).toMatchObject({ runId: "f2", status: "queued" });

      process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), "stagechart-worker-cache-"));
      const worker = await cli("worker", "--until-idle");
      expect(worker.code).toBe(0);
      expect(worker.stdout).toBe("started f1\ndone f1\nstarted f2\ndone f2\n");
      nothingSecret();
    },
  );
});

/** A copy of the bundled code-review pipeline (its stages, its script) in `project`: its path. */
function pipelineCopyIn(project: string): string {
  cpSync(join(REPO_ROOT, "stages"), join(project, "stages"), { recursive: true });
  mkdirSync(join(project, "machines"));
  for (const file of ["code-review.yaml", "code-review.script.yaml"])
    copyFileSync(join(REPO_ROOT, "machines", file), join(project, "machines", file));
  return join(project, "machines/code-review.yaml");
}

/** A finished code-review run `r1` on a fresh demo project, with the project's own store. */
async function finishedProject() {
  const project = demoProject();
  const run = await runCli(
    ...["run", "code-review", "--task", "refactor auth module", "--root", project],
    ...["--store", storeOf(project), "--headless", "--run-id", "r1", "--json"],
  );
  expect(run.code).toBe(0);
  return project;
}

describe("stagechart fork", () => {
  it("refuses one that is no step, and --detach with --force or answers, a worker cannot be given them (exit 2)", async () => {
    const usage = await runCli("fork", "r1", "--at", "zero");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('a step is a whole number from 1, got "zero"');
    const forced = await runCli("fork", "r1", "--at", "1", "--detach", "--force");
    expect(forced.code).toBe(2);
    expect(forced.stderr).toContain("cannot be used with option '--force'");
    const answered = await runCli("fork", "r1", "--at", "1", "--detach", "--input", "yes");
    expect(answered.code).toBe(2);
  });

  it.skipIf(noPostgres)(
    "names a PostgreSQL store it cannot reach without its password, exit 1",
    async () => {
      const { password } = postgres();
      const unreachable = `postgres://stagechart:${password}@127.0.0.1:1/nowhere`;
      const refused = await runCli("fork", "r1", "--at", "1", "--store", unreachable);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^Session\/StoreUnavailable: .*stagechart@127\.0\.0\.1:1/);
      expect(`${refused.stdout}${refused.stderr}`).not.toContain(password);
    },
  );

  it("runs on --model when given, keeping the source run's other settings", async () => {
    const project = await finishedProject();
    const script = join(project, "other.script.yaml");
    copyFileSync(join(REPO_ROOT, "machines/code-review.script.yaml"), script);
    const fork = await storeCommand(
      project,
      "fork",
      "r1",
      "--at",
      "1",
      "--run-id",
      "f1",
      "--model",
      `scripted:${script}`,
      "--headless",
      "--json",
    );
    expect(fork.code).toBe(0);
    const store = SqliteStore.open(storeOf(project));
    if (!store.ok) throw store.error;
    try {
      const [source, forked] = ["r1", "f1"].map((runId) => store.value.getRun(runId));
      if (!source?.ok || !forked?.ok) throw new Error("a run is missing");
      const { model: _model, defaultModel, ...kept } = source.value.options;
      expect(defaultModel).toBe(true);
      expect(forked.value.options).toMatchObject({ ...kept, model: `scripted:${script}` });
      expect(forked.value.options).not.toHaveProperty("defaultModel");
    } finally {
      store.value.close();
    }
  });
});

describe("stagechart fork --model, then resume", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  /**
   * `deciding` (a person accepts or rejects) run on `sourceModel` (none: the script beside it)
   * until it waits at its ask, forked from there onto `forkModel`, waiting too: the fork's id.
   */
  async function forkedOnto(sourceModel: string | undefined, forkModel: (dir: string) => string) {
    const dir = tempDir();
    const pipeline = join(dir, "deciding.yaml");
    writeFileSync(pipeline, DECIDING);
    writeFileSync(join(dir, "deciding.script.yaml"), "stages: {}\n");
    writeFileSync(join(dir, "other.script.yaml"), "stages: {}\n");
    const store = join(dir, "runs.db");
    const model = sourceModel === undefined ? [] : ["--model", sourceModel];
    const common = ["--store", store, "--headless", "--json"];
    const run = await runCli("run", pipeline, ...model, "--root", dir, "--run-id", "d1", ...common);
    expect(summaryOf(run.stdout)).toMatchObject({ status: "suspended" });
    const steps = JSON.parse((await runCli("history", "d1", "--json", "--store", store)).stdout);
    const at = String((steps as HistoryStep[]).at(-1)?.step);
    const fork = await runCli(
      "fork",
      "d1",
      "--at",
      at,
      "--run-id",
      "d2",
      "--model",
      forkModel(dir),
      ...common,
    );
    expect(summaryOf(fork.stdout)).toMatchObject({ runId: "d2", status: "suspended" });
    const resume = () => runCli("resume", "d2", "--input", '{"decision":"accepted"}', ...common);
    return { dir, resume };
  }

  it("resumes a fork moved off the script beside the pipeline once that script is gone", async () => {
    const { dir, resume } = await forkedOnto(
      undefined,
      (dir) => `scripted:${join(dir, "other.script.yaml")}`,
    );
    rmSync(join(dir, "deciding.script.yaml"));
    const resumed = await resume();
    const { runId, status, error } = summaryOf(resumed.stdout);
    expect({ runId, status, error }).toEqual({ runId: "d2", status: "done", error: undefined });
    expect(resumed.code).toBe(0);
  });

  it("resumes without a key a fork moved off a model whose base URL carried one", async () => {
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", "");
    const { resume } = await forkedOnto(
      "openai-compatible:http://sk-in-url@127.0.0.1:9/v1#local",
      () => "openai-compatible:http://127.0.0.1:9/v1#local",
    );
    const resumed = await resume();
    const { runId, status, error } = summaryOf(resumed.stdout);
    expect({ runId, status, error }).toEqual({ runId: "d2", status: "done", error: undefined });
    expect(resumed.code).toBe(0);
  });
});
