import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { environmentKeysRedactor, withoutProviderKeys } from "../secrets/key-variables.js";
import {
  type BashConfinement,
  bashConfinement,
  bwrapArguments,
  DEFAULT_SANDBOX,
  refusalMessage,
} from "./bash-sandbox.js";
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
 * Runs a shell command in the project root, inside bubblewrap when the context's confinement says
 * so (see `bwrapArguments` for what the command sees). Where the sandbox cannot be used, Bash is
 * refused, unless the host chose to let it run unconfined, where a command can touch anything
 * the process can. The stage envelope,
 * the guard rules (which see the command as the call's summary) and approvals fence it too.
 */
export const bashTool: Tool<BashArgs> = {
  name: "Bash",
  description:
    "Run a bash command in the project root. Returns exitCode, stdout and stderr (each cut to " +
    "its last part when long); a non-zero exit code is a normal result. Stdin is empty. Stopped " +
    "after `timeoutMs`, together with every process it started. Where the host sandboxes it, " +
    "only the project root is writable, nothing outside it but the system directories is " +
    "visible, /tmp is private and there is no network.",
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
  const confinement = context.sandbox ?? bashConfinement(DEFAULT_SANDBOX);
  if (!confinement.sandboxed && confinement.bash === "refused") {
    const message = refusalMessage(confinement);
    return Promise.resolve(failure("ToolTerminal/SandboxUnavailable", message, { command }));
  }
  const ownTimeout = timeoutMs === undefined ? undefined : deadline(timeoutMs, context.signal);
  const signal = ownTimeout?.signal ?? context.signal;
  const stdout = new TailBuffer(context.limits.maxOutputBytes);
  const stderr = new TailBuffer(context.limits.maxOutputBytes);
  let status = "";

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
    const [file, args] = commandLine(command, context.root, confinement);
    try {
      // detached: the command leads its own process group, so stopping it stops its children too.
      // fd 3 carries bubblewrap's status: no exit code there means the sandbox never started.
      child = spawn(file, args, {
        cwd: context.root,
        env: context.env ?? withoutProviderKeys(process.env, environmentKeysRedactor(process.env)),
        detached: true,
        stdio: ["ignore", "pipe", "pipe", "pipe"],
      });
    } catch (error) {
      spawnFailed(error as Error);
      return;
    }
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.stdio[3]?.on("data", (chunk: Buffer) => {
      status += chunk.toString("utf8");
    });
    child.on("error", spawnFailed);
    child.on("close", (code, signalName) => {
      if (confinement.sandboxed && !status.includes('"exit-code"')) {
        spawnFailed(new Error(`the sandbox did not start: ${stderr.text().trim()}`));
        return;
      }
      finish(
        success({
          exitCode: code ?? 128 + (signalName ? constants.signals[signalName] : 0),
          stdout: stdout.text(),
          stderr: stderr.text(),
        }),
      );
    });
    signal.addEventListener("abort", stop, { once: true });
  });
}

/** The program and arguments that run `command`: bash, inside bubblewrap when sandboxed. */
function commandLine(
  command: string,
  root: string,
  confinement: BashConfinement,
): [string, string[]] {
  const bash = ["bash", "-c", command];
  if (!confinement.sandboxed) return [bash[0] as string, bash.slice(1)];
  const sandbox = bwrapArguments(root, confinement.network);
  return [confinement.bwrap, [...sandbox, "--json-status-fd", "3", "--", ...bash]];
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
