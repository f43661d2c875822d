import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { main } from "../../src/cli/main.js";
import type { AuditEvent } from "../../src/events/audit.js";
import type { RunStore } from "../../src/runtime/store-port.js";
import type { WorkerPool } from "../../src/store/postgres/worker-pool.js";
import { runWorker, type WorkerEvent } from "../../src/worker/run-worker.js";
import { demoProject, REPO_ROOT } from "./cli.js";
import { withDelays } from "./delayed-scripts.js";

const MACHINES = join(REPO_ROOT, "machines");

/**
 * Queues `count` runs of `pipeline` (a bundled one) on the store at `url`, on its scripted model
 * with every reply `delayMs` late: the first through `stagechart run --detach`, the others as
 * copies of its row (the same definition and settings), as many `--detach`es would store them.
 */
export async function queueRuns(
  store: RunStore,
  url: string,
  { pipeline, count, delayMs }: { pipeline: string; count: number; delayMs: number },
): Promise<string[]> {
  const dir = demoProject();
  const script = join(dir, `${pipeline}.script.yaml`);
  writeFileSync(
    script,
    withDelays(readFileSync(join(MACHINES, `${pipeline}.script.yaml`), "utf8"), delayMs),
  );
  let stderr = "";
  const quiet = {
    stdout: () => {},
    stderr: (text: string) => {
      stderr += text;
    },
  };
  const first = "fleet-0000";
  const file = join(MACHINES, `${pipeline}.yaml`);
  const detached = await main(
    [
      ...["run", file, "--task", "Rename auth", "--detach", "--run-id", first],
      ...["--store", url, "--root", dir, "--model", `scripted:${script}`],
    ],
    quiet,
  );
  if (detached !== 0) throw new Error(`run --detach exited ${detached}: ${stderr}`);
  const template = await store.getRun(first);
  if (!template.ok) throw template.error;
  const { pipelineId, definitionHash, options } = template.value;
  const runIds = [first];
  for (let i = 1; i < count; i++) {
    const runId = `fleet-${String(i).padStart(4, "0")}`;
    const queued = await store.enqueueRun({ runId, pipelineId, definitionHash, options });
    if (!queued.ok) throw queued.error;
    runIds.push(runId);
  }
  return runIds;
}

/** A `stagechart worker` process and the lines it printed. */
export interface WorkerProcess {
  child: ChildProcess;
  lines: string[];
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `bin/stagechart.js worker` on `url` with a cache of its own, as on its own machine. */
export function startWorker(url: string, flags: string[]): WorkerProcess {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, "bin/stagechart.js"), "worker", "--store", url, ...flags],
    {
      env: { ...process.env, XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), "stagechart-cache-")) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const lines: string[] = [];
  let pending = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const parts = (pending + chunk.toString()).split("\n");
    pending = parts.pop() ?? "";
    lines.push(...parts);
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on("close", (code, signal) => done({ code, signal })),
  );
  return { child, lines, stderr: () => stderr, exited };
}

/** The runs a worker started (`started <runId>`) and those it saw end as `done`. */
export function runsOf(worker: WorkerProcess): { started: string[]; done: string[] } {
  const ids = (word: string) =>
    worker.lines.filter((line) => line.startsWith(`${word} `)).map((line) => line.split(" ")[1]);
  return { started: ids("started") as string[], done: ids("done") as string[] };
}

/** Waits until `check` holds, looking every `everyMs`. */
export async function until(check: () => boolean | Promise<boolean>, everyMs = 50): Promise<void> {
  while (!(await check())) await new Promise((later) => setTimeout(later, everyMs));
}

/**
 * What must hold of a run no two workers ever executed at once: its audit log gapless from 1,
 * one `StageExited` for each stage execution, no model turn recorded twice, one end.
 */
export function executionProblems(events: readonly AuditEvent[]): string[] {
  const problems: string[] = [];
  events.forEach((event, index) => {
    if (event.seq !== index + 1) problems.push(`seq ${event.seq} at position ${index + 1}`);
  });
  const exits = new Map<string, number>();
  const turns = new Set<string>();
  for (const event of events) {
    const execution = event.stageExecutionId;
    if (execution === undefined) continue;
    if (!exits.has(execution)) exits.set(execution, 0);
    if (event.type === "StageExited") exits.set(execution, (exits.get(execution) ?? 0) + 1);
    if (event.type === "ModelTurn") {
      const turn = `${execution}#${event.attempt}#${String(event.payload.turn)}`;
      if (turns.has(turn)) problems.push(`model turn ${turn} recorded twice`);
      turns.add(turn);
    }
  }
  for (const [execution, count] of exits)
    if (count !== 1) problems.push(`${execution} exited ${count} times`);
  const ends = events.filter((event) => event.type === "RunCompleted").length;
  if (ends !== 1) problems.push(`${ends} RunCompleted events`);
  return problems;
}

/**
 * `startWorker` for a test file: each worker it starts is SIGKILLed after its test, whatever
 * happens (a test that fails or times out must not leave its workers behind).
 */
export function workerProcesses(): (url: string, flags: string[]) => WorkerProcess {
  const started: WorkerProcess[] = [];
  afterEach(() => {
    for (const worker of started.splice(0)) worker.child.kill("SIGKILL");
  });
  return (url, flags) => {
    const spawned = startWorker(url, flags);
    started.push(spawned);
    return spawned;
  };
}

/**
 * `runWorker` in this process for a test file, each pool stopped after its test whatever
 * happens, with its own cache directory; what each worker told, in order.
 */
export function workerPools(): (options: Parameters<typeof runWorker>[0]) => {
  pool: WorkerPool;
  events: WorkerEvent[];
} {
  const pools: WorkerPool[] = [];
  beforeEach(() => {
    process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), "stagechart-worker-cache-"));
  });
  // A loaded machine may take a while to stop a pool: its slots' claims, its LISTEN connection.
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.stop();
    delete process.env.XDG_CACHE_HOME;
  }, 30_000);
  return (options) => {
    const events: WorkerEvent[] = [];
    const pool = runWorker({ ...options, onEvent: (event) => events.push(event) });
    pools.push(pool);
    return { pool, events };
  };
}
