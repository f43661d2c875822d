import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { deadline } from "./deadline.js";
import { cancelled, failure, success, timedOut } from "./outcome.js";
import { keepTail } from "./text.js";
import type { Tool, ToolContext, ToolOutcome } from "./types.js";

export interface BashArgs {
  command: string;
  /** Stop the command after this long; the host's limit still applies. */
  timeoutMs?: number;
}

/**
 * Runs a shell command in the project root. Bash is NOT sandboxed beyond its working directory:
 * a command can touch anything the process can. What fences it is the stage envelope, the guard
 * rules (which see the command as the call's summary) and approvals (DESIGN.md §4.2).
 */
export const bashTool: Tool<BashArgs> = {
  name: "Bash",
  description:
    "Run a bash command in the project root. Returns exitCode, stdout and stderr (each cut to " +
    "its last part when long); a non-zero exit code is a normal result. Stdin is empty. Stopped " +
    "after `timeoutMs`, together with every process it started.",
  inputSchema: {
    type: "object",
    properties: {
      command: { type: "string", minLength: 1, description: "The command line, run with bash -c" },
      timeoutMs: { type: "integer", minimum: 1, maximum: 600_000, description: "Time limit in ms" },
    },
    required: ["command"],
    additionalProperties: false,
  },
  mutates: true,
  summarize: (args) => args.command,
  execute: (args, context) => runCommand(args, context),
};

function runCommand({ command, timeoutMs }: BashArgs, context: ToolContext): Promise<ToolOutcome> {
  if (context.signal.aborted) return Promise.resolve(cancelled("Bash"));
  const ownTimeout = timeoutMs === undefined ? undefined : deadline(timeoutMs);
  const signal = ownTimeout ? AbortSignal.any([context.signal, ownTimeout.signal]) : context.signal;
  const stdout = new TailBuffer(context.limits.maxOutputBytes);
  const stderr = new TailBuffer(context.limits.maxOutputBytes);

  return new Promise((resolve) => {
    let child: ChildProcess;
    const finish = (outcome: ToolOutcome) => {
      ownTimeout?.clear();
      signal.removeEventListener("abort", stop);
      resolve(outcome);
    };
    const stop = () => {
      killGroup(child);
      const limit = timeoutMs ?? context.limits.timeoutMs;
      finish(context.signal.aborted ? cancelled("Bash") : timedOut("Bash", limit));
    };
    const spawnFailed = (error: Error) => {
      const message = `bash could not be started: ${error.message}`;
      finish(failure("ToolTerminal/SpawnFailed", message, { command }));
    };
    try {
      // detached: the command leads its own process group, so stopping it stops its children too.
      child = spawn("bash", ["-c", command], {
        cwd: context.root,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      spawnFailed(error as Error);
      return;
    }
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", spawnFailed);
    child.on("close", (code, signalName) =>
      finish(
        success({
          exitCode: code ?? 128 + (signalName ? constants.signals[signalName] : 0),
          stdout: stdout.text(),
          stderr: stderr.text(),
        }),
      ),
    );
    signal.addEventListener("abort", stop, { once: true });
  });
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** Keeps at least the last `maxBytes` of a stream, and counts everything. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private kept = 0;
  private total = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.kept += chunk.length;
    this.total += chunk.length;
    while (this.chunks.length > 1 && this.kept - (this.chunks[0]?.length ?? 0) >= this.maxBytes) {
      this.kept -= this.chunks.shift()?.length ?? 0;
    }
  }

  text(): string {
    return keepTail(Buffer.concat(this.chunks), this.total, this.maxBytes);
  }
}
