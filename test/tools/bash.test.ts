import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import { bashTool } from "../../src/tools/bash.js";
import type { BashConfinement } from "../../src/tools/bash-sandbox.js";
import { invokeTool } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf, type Project } from "./project.js";

/** A number no other process has in its command line, to find the processes a command started. */
const uniqueSleep = () => `5.${String(Math.random()).slice(2, 11)}`;

/**
 * The live processes whose command line holds `marker` (a zombie, dead and waiting to be reaped,
 * does not count). Found through /proc, so processes inside the sandbox's own PID namespace are
 * seen too.
 */
function processesWith(marker: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        return state !== "Z" && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

const allStopped = (marker: string) => waitFor(() => processesWith(marker).length === 0);

/** The kill tests run both inside the sandbox (where it can be used) and unconfined. */
const CONFINEMENTS: [string, BashConfinement | undefined][] = [
  ["as the host runs it", undefined],
  [
    "unconfined",
    { sandboxed: false, mode: "off", reason: "turned off by the test", bash: "unconfined" },
  ],
];

describe("Bash", () => {
  it("runs a command in the root and returns exit code, stdout and stderr", async () => {
    const project = makeProject();
    const command = "pwd; echo oops >&2; exit 3";
    const outcome = await invokeTool(bashTool, { command }, project.context());
    expect(outcome).toEqual({
      ok: true,
      output: { exitCode: 3, stdout: `${project.root}\n`, stderr: "oops\n" },
    });
  });

  it("gives the command empty stdin instead of waiting for input", async () => {
    const project = makeProject();
    const output = outputOf(await invokeTool(bashTool, { command: "cat" }, project.context()));
    expect(output).toEqual({ exitCode: 0, stdout: "", stderr: "" });
  });

  it("reports a command killed by a signal as 128 + the signal number", async () => {
    const project = makeProject();
    const output = outputOf(
      await invokeTool(bashTool, { command: "kill -TERM $$" }, project.context()),
    );
    expect(output.exitCode).toBe(143);
  });

  it("keeps the tail of long output, within maxOutputBytes, saying how much went", async () => {
    const project = makeProject();
    const context = project.context({ limits: { maxOutputBytes: 100 } });
    const command = "seq 1 20000; seq 1 20000 >&2";
    const output = outputOf(await invokeTool(bashTool, { command }, context));
    for (const stream of [output.stdout, output.stderr] as string[]) {
      expect(Buffer.byteLength(stream)).toBeLessThanOrEqual(100);
      expect(stream).toMatch(/^\[truncated: \d+ earlier bytes\] …\n/);
      expect(stream.endsWith("19999\n20000\n")).toBe(true);
      const [, dropped] = /^\[truncated: (\d+)/.exec(stream) ?? [];
      const total = Buffer.byteLength(
        Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join(""),
      );
      expect(Number(dropped)).toBe(
        total - Buffer.byteLength(stream.slice(stream.indexOf("\n") + 1)),
      );
    }
  });

  it("never splits a multi-byte character when keeping the tail", async () => {
    const project = makeProject();
    // 100 bytes leave an odd number after the marker: a naive cut would land inside an é.
    const context = project.context({ limits: { maxOutputBytes: 100 } });
    const command = "for i in $(seq 300); do printf 'é'; done";
    const output = outputOf(await invokeTool(bashTool, { command }, context));
    expect(output.stdout).toMatch(/^\[truncated: \d+ earlier bytes\] …\né+$/);
  });

  describe.each(CONFINEMENTS)("stopping a command (%s)", (_, sandbox) => {
    const contextOf = (project: Project, options: Parameters<Project["context"]>[0] = {}) => ({
      ...project.context(options),
      ...(sandbox && { sandbox }),
    });

    it("stops a command at its timeoutMs with ToolTransient/ToolTimeout, killing every process it started", async () => {
      const project = makeProject();
      const pause = uniqueSleep();
      const started = Date.now();
      const outcome = await invokeTool(
        bashTool,
        { command: `sleep ${pause} & sleep ${pause}; wait`, timeoutMs: 200 },
        contextOf(project),
      );
      expect(codeOf(outcome)).toBe("ToolTransient/ToolTimeout");
      expect(Date.now() - started).toBeLessThan(1500);
      expect(await allStopped(pause)).toBe(true);
    });

    it("is stopped by the host's limits.timeoutMs too", async () => {
      const project = makeProject();
      const pause = uniqueSleep();
      const context = contextOf(project, { limits: { timeoutMs: 200 } });
      const outcome = await invokeTool(bashTool, { command: `sleep ${pause}` }, context);
      expect(codeOf(outcome)).toBe("ToolTransient/ToolTimeout");
      expect(await allStopped(pause)).toBe(true);
    });

    it("on cancellation returns Cancellation/StageCancelled at once and the command never finishes", async () => {
      const project = makeProject();
      const pause = uniqueSleep();
      const controller = new AbortController();
      const command = `echo started > started; sleep ${pause}; echo done > marker`;
      const running = bashTool.execute(
        { command },
        contextOf(project, { signal: controller.signal }),
      );
      expect(await waitFor(() => existsSync(join(project.root, "started")))).toBe(true);
      const aborted = Date.now();
      controller.abort();
      expect(codeOf(await running)).toBe("Cancellation/StageCancelled");
      expect(Date.now() - aborted).toBeLessThan(500);
      expect(await allStopped(pause)).toBe(true);
      expect(existsSync(join(project.root, "marker"))).toBe(false);
    });
  });

  it("does not start a command when the signal is already aborted", async () => {
    const project = makeProject();
    const context = project.context({ signal: AbortSignal.abort() });
    const outcome = await bashTool.execute({ command: "echo ran > marker" }, context);
    expect(codeOf(outcome)).toBe("Cancellation/StageCancelled");
    await sleep(50);
    expect(existsSync(join(project.root, "marker"))).toBe(false);
  });

  it("reports a shell that cannot start as ToolTerminal/SpawnFailed", async () => {
    const project = makeProject();
    const context = { ...project.context(), root: join(project.root, "no-such-dir") };
    expect(codeOf(await invokeTool(bashTool, { command: "true" }, context))).toBe(
      "ToolTerminal/SpawnFailed",
    );
  });

  it.each([{}, { command: "" }, { command: "true", timeoutMs: 0 }, { command: ["ls"] }])(
    "rejects invalid arguments %j",
    async (args) => {
      expect(codeOf(await invokeTool(bashTool, args, makeProject().context()))).toBe(
        "ToolTerminal/InvalidToolInput",
      );
    },
  );

  it("summarizes a call as its command", () => {
    expect(bashTool.summarize({ command: "git status", timeoutMs: 10 })).toBe("git status");
  });
});

describe("Bash's environment", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it.each(CONFINEMENTS)("holds no provider key, %s", async (_, sandbox) => {
    vi.stubEnv("OPENAI_API_KEY", "sk-canary-bash-1");
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-canary-bash-2");
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", "sk-canary-bash-3");
    vi.stubEnv("OPENAI_BASE_URL", "http://user:sk-canary-bash-1@localhost:1/v1");
    vi.stubEnv("STAGECHART_TEST_VISIBLE", "still-here");
    const project = makeProject();
    const context = { ...project.context(), ...(sandbox && { sandbox }) };
    const outcome = await invokeTool(bashTool, { command: "env" }, context);
    const { stdout } = outputOf(outcome) as { stdout: string };
    expect(stdout).toContain("STAGECHART_TEST_VISIBLE=still-here");
    expect(stdout).not.toContain("sk-canary-bash");
  });

  it.each(CONFINEMENTS)("holds no shared-store credential, %s", async (_, sandbox) => {
    vi.stubEnv("STAGECHART_STORE", "postgres://worker:pw-canary-1@db:5432/stagechart");
    vi.stubEnv("DATABASE_URL", "postgres://app:pw-canary-2@db/app");
    vi.stubEnv("PGPASSWORD", "pw-canary-3");
    const project = makeProject();
    const context = { ...project.context(), ...(sandbox && { sandbox }) };
    const outcome = await invokeTool(bashTool, { command: "env" }, context);
    const { stdout } = outputOf(outcome) as { stdout: string };
    expect(stdout).not.toContain("pw-canary");
  });

  it("is the context's when it has one", async () => {
    const project = makeProject();
    const context = { ...project.context(), env: { PATH: process.env.PATH ?? "", ONLY: "this" } };
    const outcome = await invokeTool(
      bashTool,
      { command: "echo $ONLY; printenv HOME || echo none" },
      context,
    );
    expect(outputOf(outcome)).toMatchObject({ stdout: "this\nnone\n" });
  });
});
