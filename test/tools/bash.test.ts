import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { bashTool } from "../../src/tools/bash.js";
import { invokeTool } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf, type Project } from "./project.js";

/** Whether a process runs (a zombie, dead and waiting to be reaped, does not count). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

/** The processes a command wrote to the file `pids` (`echo $$ > pids`). */
const pidsOf = (project: Project) => project.read("pids").trim().split("\n").map(Number);

const allStopped = (project: Project) => waitFor(() => !pidsOf(project).some(isRunning));

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

  it("stops a command at its timeoutMs with ToolTransient/ToolTimeout, killing its whole process group", async () => {
    const project = makeProject();
    const started = Date.now();
    const outcome = await invokeTool(
      bashTool,
      { command: "echo $$ > pids; sleep 5 & echo $! >> pids; wait", timeoutMs: 200 },
      project.context(),
    );
    expect(codeOf(outcome)).toBe("ToolTransient/ToolTimeout");
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await allStopped(project)).toBe(true);
  });

  it("is stopped by the host's limits.timeoutMs too", async () => {
    const project = makeProject();
    const context = project.context({ limits: { timeoutMs: 200 } });
    const outcome = await invokeTool(bashTool, { command: "echo $$ > pids; sleep 5" }, context);
    expect(codeOf(outcome)).toBe("ToolTransient/ToolTimeout");
    expect(await allStopped(project)).toBe(true);
  });

  it("on cancellation returns Cancellation/StageCancelled at once and the command never finishes", async () => {
    const project = makeProject();
    const controller = new AbortController();
    const command = "echo $$ > pids; sleep 5; echo done > marker";
    const running = bashTool.execute({ command }, project.context({ signal: controller.signal }));
    expect(
      await waitFor(() => existsSync(join(project.root, "pids")) && project.read("pids") !== ""),
    ).toBe(true);
    const aborted = Date.now();
    controller.abort();
    expect(codeOf(await running)).toBe("Cancellation/StageCancelled");
    expect(Date.now() - aborted).toBeLessThan(500);
    expect(await allStopped(project)).toBe(true);
    expect(existsSync(join(project.root, "marker"))).toBe(false);
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
