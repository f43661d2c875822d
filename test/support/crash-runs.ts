import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import type { AuditEvent } from "../../src/events/audit.js";
import { SqliteStore } from "../../src/store/index.js";
import { tempDir } from "./stages.js";

/**
 * Runs to kill with SIGKILL and resume: a pipeline with every kind of wait, the process that
 * runs it (`crash-child.mjs`, or the real CLI), and what a finished run's store and logs say.
 * Used by `test/runtime/crash.test.ts` and the crash campaign (`bench/crash-campaign.ts`).
 * Both run the built package: `npm run build` first.
 */

const CHILD = resolve(import.meta.dirname, "crash-child.mjs");
const BIN = resolve(import.meta.dirname, "../../bin/stagechart.js");

/** A stage file: `tools` its envelope, `retry` its retry policy. */
const stage = (id: string, tools: string[], extra = "") => `---
id: ${id}
name: ${id}
allowedTools: ${JSON.stringify(tools)}
completionTool: submit_work
completionSchema:
  type: object
  required: [summary]
  properties: { summary: { type: string } }
retryPolicy: { maxAttempts: 2, backoff: fixed, delayMs: 500 }
turnCap: ${extra ? 2 : 5}
resolutionPolicy: fail
---
Do the ${id} part of {{ctx.task}}.
`;

/** A command for the slow tool: it logs when it starts, by name, then takes a while. */
const slow = (name: string) =>
  `echo "$(date +%s%3N) ${name}" >> calls.log; sleep 0.3; echo ${name}`;

/**
 * Plan asks for Bash outside its envelope (a grant wait), then Left and Right run in parallel:
 * Left with a slow tool and a provider error (backoff), Right with a slow tool and a turn cap
 * (a retry after backoff); Review joins them. Every model turn is slow too.
 */
export function crashProject(): string {
  const dir = tempDir();
  mkdirSync(join(dir, "stages"));
  writeFileSync(join(dir, "stages/plan.md"), stage("plan", ["Read"]));
  writeFileSync(join(dir, "stages/left.md"), stage("left", ["Bash"]));
  writeFileSync(join(dir, "stages/right.md"), stage("right", ["Bash"], "capped"));
  writeFileSync(join(dir, "stages/review.md"), stage("review", ["Bash"]));
  writeFileSync(
    join(dir, "crash.yaml"),
    `id: crash
context: { type: object, properties: { task: { type: string } } }
entry: plan
stages:
  plan: { file: stages/plan.md }
  left: { file: stages/left.md }
  right: { file: stages/right.md }
  review: { file: stages/review.md }
next:
  plan: { parallel: [left, right], join: review }
`,
  );
  const done = (delayMs: number) =>
    `{ tool: submit_work, args: { summary: done }, delayMs: ${delayMs} }`;
  writeFileSync(
    join(dir, "crash.script.yaml"),
    `stages:
  plan:
    - { tool: Bash, args: { command: '${slow("plan-1")}' }, delayMs: 150 }
    - { tool: Read, args: { path: calls.log }, delayMs: 100 }
    - ${done(150)}
  left:
    - { tool: Bash, args: { command: '${slow("left-1")}' }, delayMs: 200 }
    - { error: overloaded, status: 503, delayMs: 50 }
    - { tool: Bash, args: { command: '${slow("left-2")}' }, delayMs: 100 }
    - { tool: Bash, args: { command: '${slow("left-3")}' }, delayMs: 100 }
    - ${done(100)}
  right:
    - { tool: Bash, args: { command: '${slow("right-1")}' }, delayMs: 100 }
    - { text: "still thinking", delayMs: 100 }
    - { tool: Bash, args: { command: '${slow("right-2")}' }, delayMs: 150 }
    - ${done(100)}
  review:
    - { tool: Bash, args: { command: '${slow("review-1")}' }, delayMs: 200 }
    - ${done(200)}
`,
  );
  return dir;
}

export interface Life {
  code: number | null;
  events: string[];
  result?: { status: string; waiting?: { proposalId: string }[] };
}

/**
 * Runs a process — the logging child (`crash-child.mjs` unless another `script` is given), or
 * the real CLI — and kills it with SIGKILL `delayMs` after
 * its `afterEvents`-th event, if given. The child prints `E …` per event and `R <result>` last;
 * the CLI with --json prints a progress line per event on stderr and its summary on stdout.
 */
export function live(
  how: { child: string[]; script?: string } | { cli: string[] },
  kill?: { afterEvents: number; delayMs: number },
): Promise<Life> {
  const cli = "cli" in how;
  const args = cli ? [BIN, ...how.cli] : [how.script ?? CHILD, ...how.child];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  const life: Life = { code: null, events: [] };
  const sawEvent = (line: string) => {
    life.events.push(line);
    if (kill && life.events.length === kill.afterEvents)
      setTimeout(() => child.kill("SIGKILL"), kill.delayMs);
  };
  let last = "";
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    if (cli) last = line;
    else if (line.startsWith("R ")) life.result = JSON.parse(line.slice(2));
    else if (line.startsWith("E ")) sawEvent(line);
  });
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
    if (cli) sawEvent(line);
    else process.stderr.write(`${line}\n`);
  });
  return new Promise((done) =>
    child.on("close", (code) => {
      life.code = code;
      if (cli && code !== null && last.startsWith("{")) life.result = JSON.parse(last);
      done(life);
    }),
  );
}

/** The arguments of `crash-child.mjs` for a run of the crash project in `dir`. */
export const childArgs = (mode: string, dir: string, runId: string, approve: string[] = []) => [
  mode,
  join(dir, "runs.db"),
  runId,
  join(dir, "crash.yaml"),
  join(dir, "crash.script.yaml"),
  dir,
  join(dir, "models.log"),
  ...approve,
];

/** What a killed and resumed run of the crash project left behind. */
export interface CrashFacts {
  status: string;
  /** Every audit event's seq, in order. */
  seqs: number[];
  firstEvent: AuditEvent | undefined;
  lastEvent: string | undefined;
  /** `StageExited` events per stage execution that was set up. */
  exits: Record<string, number>;
  /** Model requests made again after their reply was journaled. */
  modelRepeats: string[];
  /** Tool runs started again after their result was journaled. */
  toolRepeats: string[];
  /** Tool runs whose call was never approved in the audit log. */
  toolsUnaccounted: string[];
  /** Names of the tool runs logged, in order. */
  toolRuns: string[];
}

/**
 * Reads a run's store and the logs of its lives. A call may repeat only while it was in flight:
 * never once its result was recorded. Model requests are logged by the child's lives; tool runs
 * log themselves in every life.
 */
export function crashFacts(dir: string, runId: string): CrashFacts {
  const file = join(dir, "runs.db");
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const journal = new Database(file, { readonly: true });
  try {
    const run = store.getRun(runId);
    const events = store.auditOf(runId);
    const exits: Record<string, number> = {};
    for (const e of events) {
      if (e.type === "StageSetup" && e.stageExecutionId) exits[e.stageExecutionId] ??= 0;
      if (e.type === "StageExited" && e.stageExecutionId)
        exits[e.stageExecutionId] = (exits[e.stageExecutionId] ?? 0) + 1;
    }
    // A journal entry is recorded with its step (migration 11): the step's time is its own.
    const recordedAtOf = journal
      .prepare(
        `SELECT s.at FROM steps s, json_each(s.journal) j WHERE j.value ->> 0 = ?
         ORDER BY s.step LIMIT 1`,
      )
      .pluck();
    const recordedAt = (key: string) => {
      const at = recordedAtOf.get(key) as string | undefined;
      return at === undefined ? undefined : Date.parse(at);
    };
    const after = (at: number, key: string) => {
      const recorded = recordedAt(key);
      return recorded !== undefined && at > recorded;
    };
    const requests = linesOf(join(dir, "models.log")).map(
      (l) => JSON.parse(l) as { key: string; at: number },
    );
    const approved = new Map(
      events
        .filter((e) => e.type === "ToolApproved")
        .map((e) => [String(e.payload.argsSummary), String(e.payload.proposalId)]),
    );
    const tools = linesOf(join(dir, "calls.log")).map((l) => {
      const [at, name] = l.split(" ");
      const proposal = [...approved].find(([summary]) => summary.includes(String(name)))?.[1];
      return { at: Number(at), name: String(name), proposal };
    });
    return {
      status: run.ok ? run.value.status : run.error.code,
      seqs: events.map((e) => e.seq),
      firstEvent: events[0],
      lastEvent: events.at(-1)?.type,
      exits,
      modelRepeats: requests.filter(({ key, at }) => after(at, key)).map(({ key }) => key),
      toolRepeats: tools
        .filter(({ at, proposal }) => proposal && after(at, `tool:${runId}/${proposal}`))
        .map(({ name }) => name),
      toolsUnaccounted: tools.filter(({ proposal }) => !proposal).map(({ name }) => name),
      toolRuns: tools.map(({ name }) => name),
    };
  } finally {
    store.close();
    journal.close();
  }
}

function linesOf(file: string): string[] {
  try {
    return readFileSync(file, "utf8").trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
}
