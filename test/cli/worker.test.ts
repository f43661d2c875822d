import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openWorkerStore } from "../../src/cli/commands/worker.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { demoProject, runCli, runIn, storeCommand, storeOf } from "../support/cli.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";
import { noPostgres, testPostgres } from "../support/postgres.js";

const skip = noPostgres;
const postgres = testPostgres();
afterEach(() => {
  delete process.env.XDG_CACHE_HOME;
});

/** A worker's own cache for the definitions it writes out, as on a machine of its own. */
const ownCache = () => {
  process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), "stagechart-worker-cache-"));
};

describe("stagechart worker", () => {
  it.skipIf(skip)(
    "finishes a run queued with run --detach on a PostgreSQL store, never printing the password",
    async () => {
      const url = await postgres().createDatabase();
      const project = demoProject();
      const detached = await runCli(
        ...["run", "code-review", "--task", "Add auth", "--detach"],
        ...["--root", project, "--store", url],
      );
      const runId = detached.stdout.trim();
      ownCache();

      const worker = await runCli("worker", "--store", url, "--until-idle");
      expect(worker.code).toBe(0);
      expect(worker.stdout).toBe(`started ${runId}\ndone ${runId}\n`);
      expect(worker.stderr).toContain(`worker on postgres://stagechart@`);
      expect(`${worker.stdout}${worker.stderr}`).not.toContain(postgres().password);
      const shown = await runCli("show", runId, "--store", url, "--json");
      expect(JSON.parse(shown.stdout)).toMatchObject({ runId, status: "done" });
    },
  );

  it("finishes queued runs on a SQLite store too, n at a time", async () => {
    const project = demoProject();
    const runIds: string[] = [];
    for (const task of ["Add auth", "Add logging", "Add metrics"]) {
      const detached = await runIn(project, "run", "code-review", "--task", task, "--detach");
      runIds.push(detached.stdout.trim());
    }
    ownCache();
    const worker = await runCli(
      ...["worker", "--store", storeOf(project), "--until-idle", "--concurrency", "2"],
    );
    expect(worker.code).toBe(0);
    const lines = worker.stdout.trim().split("\n").sort();
    expect(lines).toEqual(
      [
        ...runIds.map((runId) => `done ${runId}`),
        ...runIds.map((runId) => `started ${runId}`),
      ].sort(),
    );
    for (const runId of runIds) {
      const shown = await storeCommand(project, "show", runId, "--json");
      expect(JSON.parse(shown.stdout)).toMatchObject({ status: "done" });
    }
  });

  it("fails a run it cannot run here, with the reason, so that no worker takes it again", async () => {
    const project = demoProject();
    const script = join(mkdtempSync(join(tmpdir(), "stagechart-script-")), "gone.script.yaml");
    writeFileSync(script, "stages: {}\n");
    const detached = await runIn(
      project,
      ...["run", "code-review", "--task", "Add auth", "--detach", "--model", `scripted:${script}`],
    );
    const runId = detached.stdout.trim();
    rmSync(script);
    ownCache();

    const worker = await runCli("worker", "--store", storeOf(project), "--until-idle");
    expect(worker.code).toBe(0);
    expect(worker.stdout).toMatch(new RegExp(`^refused ${runId} [A-Za-z]+/[A-Za-z]+: .+\n$`));
    const shown = await storeCommand(project, "show", runId, "--json");
    expect(JSON.parse(shown.stdout)).toMatchObject({ status: "failed" });
    const again = await runCli("worker", "--store", storeOf(project), "--until-idle");
    expect(again.stdout).toBe("");
  });

  it("refuses a store it cannot reach with a code, naming it without its password", async () => {
    const worker = await runCli(
      ...["worker", "--store", "postgres://me:hunter2@127.0.0.1:1/nowhere", "--until-idle"],
    );
    expect(worker.code).toBe(1);
    expect(worker.stderr).toMatch(/^Session\/StoreUnavailable: /);
    expect(worker.stderr).not.toContain("hunter2");
  });

  it("takes only runs of the pipelines in --pipelines <dir>, each run still its stored definition", async () => {
    const project = demoProject();
    const review = await runIn(project, "run", "code-review", "--task", "Add auth", "--detach");
    const lifecycle = await runIn(
      project,
      ...["run", "task-lifecycle", "--task", "Add auth", "--detach"],
    );
    const [reviewId, lifecycleId] = [review.stdout.trim(), lifecycle.stdout.trim()];
    // This machine's copy of code-review has changed since: the run keeps the one it was queued with.
    const dir = mkdtempSync(join(tmpdir(), "stagechart-pipelines-"));
    const changed = readFileSync(join(MACHINES_DIR, "code-review.yaml"), "utf8").replace(
      "entry: plan",
      "entry: no-such-stage",
    );
    writeFileSync(join(dir, "code-review.yaml"), changed);
    writeFileSync(join(dir, "code-review.script.yaml"), "stages: {}\n");
    ownCache();

    const worker = await runCli(
      ...["worker", "--store", storeOf(project), "--until-idle", "--pipelines", dir],
    );
    expect(worker.code).toBe(0);
    expect(worker.stdout).toBe(`started ${reviewId}\ndone ${reviewId}\n`);
    expect(worker.stderr).toContain("of code-review only");
    const shown = async (runId: string) =>
      JSON.parse((await storeCommand(project, "show", runId, "--json")).stdout).status;
    expect(await shown(lifecycleId)).toBe("queued");

    // A worker without --pipelines takes any run.
    const any = await runCli("worker", "--store", storeOf(project), "--until-idle");
    expect(any.stdout.split("\n")[0]).toBe(`started ${lifecycleId}`);
  });

  it("refuses --pipelines naming no directory, or one without a pipeline, with a code", async () => {
    const project = demoProject();
    const missing = await runCli(
      ...[
        "worker",
        "--store",
        storeOf(project),
        "--until-idle",
        "--pipelines",
        join(project, "nope"),
      ],
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^Validation\/PipelinesDirNotFound: there is no directory /);
    const empty = join(project, "empty");
    mkdirSync(empty);
    writeFileSync(join(empty, "notes.yaml"), "just: notes\n");
    const none = await runCli(
      ...["worker", "--store", storeOf(project), "--until-idle", "--pipelines", empty],
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^Validation\/NoPipelines: /);
  });

  it.skipIf(skip)(
    "opens a PostgreSQL store with connections enough for --concurrency runs",
    async () => {
      const url = await postgres().createDatabase();
      const sizes: number[] = [];
      for (const concurrency of [1, 4, 20]) {
        const store = await openWorkerStore(url, concurrency);
        if (!store.ok) throw store.error;
        if (!(store.value instanceof PostgresStore)) throw new Error("not the PostgreSQL store");
        sizes.push(store.value.poolSize);
        await store.value.close();
        // Each run may write a step, renew its lease and poll its controls at the same moment.
        expect(store.value.poolSize).toBeGreaterThan(3 * concurrency);
      }
      expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
    },
  );
});
