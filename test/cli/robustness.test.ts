import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { SqliteStore } from "../../src/store/index.js";
import {
  demoProject,
  REPO_ROOT,
  runCli,
  runIn,
  storeCommand,
  storeOf,
  summaryOf,
} from "../support/cli.js";
import { tempDir } from "../support/stages.js";

/** The binary with its stdout's reader gone before it writes a byte: every write is EPIPE. */
function binWithClosedStdout(cwd: string, ...argv: string[]) {
  const child = spawn(process.execPath, [join(REPO_ROOT, "bin/stagechart.js"), ...argv], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.destroy();
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise<{ code: number | null; stderr: string }>((done) =>
    child.on("close", (code) => done({ code, stderr })),
  );
}

describe("a closed stdout (| head)", () => {
  it("does not stop a run: it goes on to its end, is stored, and nothing is printed about it", async () => {
    const project = demoProject();
    const run = await binWithClosedStdout(
      project,
      ...["run", "code-review", "--task", "t", "--headless", "--run-id", "r-pipe"],
    );
    // Where bubblewrap cannot run, the run rightly warns that Bash is unconfined; nothing else.
    const unconfined = /^stagechart: warning: Bash runs unconfined: .*\n/;
    expect({ ...run, stderr: run.stderr.replace(unconfined, "") }).toEqual({ code: 0, stderr: "" });
    const shown = await storeCommand(project, "show", "r-pipe", "--json");
    expect(JSON.parse(shown.stdout).status).toBe("done");
    for (const read of [["audit", "r-pipe"], ["show", "r-pipe"], ["runs"]]) {
      expect(await binWithClosedStdout(project, ...read)).toEqual({ code: 0, stderr: "" });
    }
  });
});

describe("the safety net in main", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });
  /** A new, empty store. */
  const store = () => {
    const path = join(tempDir(), "runs.db");
    const opened = SqliteStore.open(path);
    if (opened.ok) opened.value.close();
    return path;
  };

  it("prints a StagechartError nobody handled as code: message, and as JSON with --json", async () => {
    const path = store();
    vi.spyOn(SqliteStore.prototype, "listRuns").mockImplementation(() => {
      throw new StagechartError("Session/StoreUnavailable", "disk gone");
    });
    const text = await runCli("runs", "--store", path);
    expect(text).toEqual({ code: 1, stdout: "", stderr: "Session/StoreUnavailable: disk gone\n" });
    const json = await runCli("runs", "--store", path, "--json");
    expect(json.code).toBe(1);
    expect(summaryOf(json.stdout)).toMatchObject({
      status: "failed",
      error: { code: "Session/StoreUnavailable", message: "disk gone" },
    });
  });

  it("calls anything else an internal error, with its stack only under STAGECHART_DEBUG=1", async () => {
    const path = store();
    vi.spyOn(SqliteStore.prototype, "listRuns").mockImplementation(() => {
      throw new TypeError("x is not a function");
    });
    const run = await runCli("runs", "--store", path);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      "stagechart: internal error: x is not a function\n(set STAGECHART_DEBUG=1 to see the stack)\n",
    );
    vi.stubEnv("STAGECHART_DEBUG", "1");
    const debug = await runCli("runs", "--store", path);
    expect(debug.stderr).toMatch(
      /internal error: x is not a function\nTypeError: x is not a function\n\s+at /,
    );
  });
});

describe("commands that only read", () => {
  it("create no store: runs says there is none, show and audit that there is no such run", async () => {
    const path = join(tempDir(), ".stagechart/runs.db");
    expect(await runCli("runs", "--store", path)).toEqual({
      code: 0,
      stdout: `no runs yet (no store at ${path})\n`,
      stderr: "",
    });
    expect((await runCli("runs", "--store", path, "--json")).stdout).toBe("[]\n");
    for (const command of ["show", "audit", "resume", "cancel"]) {
      const run = await runCli(command, "r-x", "--store", path, "--json");
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(`Session/RunNotFound: no run r-x: there is no store at ${path}\n`);
      expect(summaryOf(run.stdout)).toMatchObject({ runId: "r-x", status: "failed" });
    }
    expect(existsSync(path)).toBe(false);
  });

  it("name the run in a refusal's JSON when they know it", async () => {
    const project = demoProject();
    await runCli(
      "run",
      "code-review",
      "--task",
      "t",
      "--headless",
      "--root",
      project,
      "--store",
      storeOf(project),
      "--run-id",
      "r-done",
    );
    const cancel = await storeCommand(project, "cancel", "r-missing", "--json");
    expect(summaryOf(cancel.stdout)).toMatchObject({
      runId: "r-missing",
      status: "failed",
      error: { code: "Session/RunNotFound" },
    });
    // The refusal leaves the run as it was: its summary says so.
    const redo = await storeCommand(project, "redo", "r-done", "nowhere", "--json");
    expect(summaryOf(redo.stdout)).toMatchObject({
      runId: "r-done",
      status: "done",
      error: { code: "Session/RunFinished" },
    });
  });
});

describe("--mcp with a name that is not one", () => {
  it("refuses the name instead of running its first word", async () => {
    const run = await runIn(
      demoProject(),
      "run",
      "code-review",
      "--task",
      "t",
      "--mcp",
      "bad name!=node -e 1",
      "--json",
    );
    expect(run.code).toBe(1);
    expect(summaryOf(run.stdout).error.code).toBe("Validation/McpServerNameInvalid");
  });
});
