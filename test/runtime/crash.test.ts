import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { tempDir } from "../support/stages.js";

const CHILD = resolve(import.meta.dirname, "../support/crash-child.mjs");
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
function crashProject(): string {
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

interface Life {
  code: number | null;
  events: string[];
  result?: { status: string; waiting?: { proposalId: string }[] };
}

/**
 * Runs a process — the logging child, or the real CLI — and kills it with SIGKILL `delayMs` after
 * its `afterEvents`-th event, if given. The child prints `E …` per event and `R <result>` last;
 * the CLI with --json prints a progress line per event on stderr and its summary on stdout.
 */
function live(
  how: { child: string[] } | { cli: string[] },
  kill?: { afterEvents: number; delayMs: number },
): Promise<Life> {
  const cli = "cli" in how;
  const args = cli ? [BIN, ...how.cli] : [CHILD, ...how.child];
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

// Kill points: after the n-th event of a process, wait this long. Spread over model turns, tool
// calls, the grant wait, backoffs and the parallel group as the run moves on.
const KILLS = [
  [3, 0],
  [4, 60],
  [2, 20],
  [6, 150],
  [3, 250],
  [5, 0],
  [4, 400],
  [8, 100],
  [2, 700],
  [6, 30],
  [5, 320],
  [9, 0],
  [4, 180],
  [7, 500],
  [3, 90],
  [10, 260],
] as const;

describe("a run killed with SIGKILL at many points", () => {
  it("resumes to done every time: a gapless audit log, no duplicate exits, no recorded call made again", async () => {
    const dir = crashProject();
    const store = join(dir, "runs.db");
    const modelLog = join(dir, "models.log");
    const common = (mode: string) => [
      mode,
      store,
      "crash-1",
      join(dir, "crash.yaml"),
      join(dir, "crash.script.yaml"),
      dir,
      modelLog,
    ];
    let lives = 0;
    let kills = 0;
    let approvals: string[] = [];
    // Every other life is the real `stagechart resume`; the last one always is.
    const resume = (approve: string[], byCli: boolean) =>
      byCli
        ? {
            cli: [
              "resume",
              "crash-1",
              "--store",
              store,
              "--headless",
              "--json",
              ...approve.flatMap((id) => ["--approve", id]),
            ],
          }
        : { child: [...common("resume"), ...approve] };
    let last: Life = await live({ child: common("start") }, { afterEvents: 4, delayMs: 100 });
    while (last.code !== 0) {
      lives += 1;
      expect(lives).toBeLessThan(60);
      if (last.code === null) kills += 1;
      else expect(last.code, JSON.stringify(last.result)).toBe(3); // suspended on the grant
      approvals = last.result?.waiting?.map((w) => w.proposalId) ?? [];
      const [afterEvents, delayMs] = KILLS[kills % KILLS.length] ?? [3, 0];
      const killing = kills < KILLS.length;
      last = await live(
        resume(approvals, !killing || lives % 2 === 0),
        killing ? { afterEvents, delayMs } : undefined,
      );
    }
    expect(kills).toBeGreaterThanOrEqual(6);

    const opened = SqliteStore.open(store);
    if (!opened.ok) throw opened.error;
    const events = opened.value.auditOf("crash-1");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const exits = events.filter((e) => e.type === "StageExited").map((e) => e.stageExecutionId);
    expect(exits.sort()).toEqual([
      "crash-1/left/1",
      "crash-1/plan/1",
      "crash-1/review/1",
      "crash-1/right/1",
    ]);
    expect(events.at(-1)?.type).toBe("RunCompleted");
    expect(opened.value.getRun("crash-1")).toMatchObject({ ok: true, value: { status: "done" } });

    // A call may repeat only while it was in flight: never once its result was recorded. Model
    // requests are logged by the child's lives; tool runs log themselves in every life.
    const journal = new Database(store, { readonly: true });
    const recordedAtOf = journal.prepare("SELECT recorded_at FROM journal WHERE key = ?").pluck();
    const recordedAt = (key: string) => {
      const at = recordedAtOf.get(key) as string | undefined;
      return at === undefined ? undefined : Date.parse(at);
    };
    const requests = readFileSync(modelLog, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    for (const { key, at } of requests) {
      const recorded = recordedAt(key);
      if (recorded !== undefined) expect(at, key).toBeLessThanOrEqual(recorded);
    }
    const approved = new Map(
      events
        .filter((e) => e.type === "ToolApproved")
        .map((e) => [String(e.payload.argsSummary), String(e.payload.proposalId)]),
    );
    const toolRuns = readFileSync(join(dir, "calls.log"), "utf8").trim().split("\n");
    for (const run of toolRuns) {
      const [at, name] = run.split(" ");
      const proposal = [...approved].find(([summary]) => summary.includes(`${name}`))?.[1];
      expect(proposal, name).toBeDefined();
      const recorded = recordedAt(`tool:crash-1/${proposal}`);
      if (recorded !== undefined) expect(Number(at), name).toBeLessThanOrEqual(recorded);
    }
    for (const name of ["plan-1", "left-1", "left-2", "left-3", "right-1", "right-2", "review-1"])
      expect(toolRuns.some((r) => r.endsWith(` ${name}`))).toBe(true);
    opened.value.close();
    journal.close();
    expect(existsSync(store)).toBe(true);
  }, 120_000);
});

describe("two processes on one run", () => {
  it("a second process is refused with Session/RunLocked while the first lives, and takes over once it is killed", async () => {
    const dir = crashProject();
    const store = join(dir, "runs.db");
    const args = (mode: string) => [
      mode,
      store,
      "locked-1",
      join(dir, "crash.yaml"),
      join(dir, "crash.script.yaml"),
      dir,
      join(dir, "models.log"),
    ];
    const parked = await live({ child: args("start") });
    const approve = parked.result?.waiting?.map((w) => w.proposalId) ?? [];
    expect(approve).toHaveLength(1);
    const first = spawn(process.execPath, [CHILD, ...args("resume"), ...approve], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines = createInterface({ input: first.stdout as NodeJS.ReadableStream });
    await new Promise<void>((ready) =>
      lines.on("line", (l) => l.endsWith("StageSetup left") && ready()),
    );

    const second = await live({ child: args("resume") });
    expect(second.code).toBe(1);
    expect(second.result).toMatchObject({ status: "refused", error: "Session/RunLocked" });

    first.kill("SIGKILL");
    await new Promise((gone) => first.on("exit", gone));
    const third = await live({ child: args("resume") });
    expect(third.code).toBe(0);
    expect(third.events[0]).toMatch(/RunResumed/);
    expect(third.result?.status).toBe("done");
  }, 30_000);
});

describe("a run killed the instant its row appears", () => {
  const killedAtRow = async (dir: string, runId: string) => {
    const store = join(dir, "runs.db");
    const args = [
      "start-killed-at-row",
      store,
      runId,
      join(dir, "crash.yaml"),
      join(dir, "crash.script.yaml"),
      dir,
      join(dir, "models.log"),
    ];
    const killed = await live({ child: args });
    expect(killed.code).toBeNull();
    expect(killed.events).toEqual([]);
    return store;
  };
  const cli = (...argv: string[]) => live({ cli: argv });

  it("is resumed from its beginning, with its id, context and options, to done", async () => {
    const dir = crashProject();
    const store = await killedAtRow(dir, "row-1");
    const parked = await cli("resume", "row-1", "--store", store, "--headless", "--json");
    expect(parked.code, JSON.stringify(parked.result)).toBe(3);
    const approve = parked.result?.waiting?.map((w) => w.proposalId) ?? [];
    expect(approve).toEqual(["row-1/plan/1/a1/t1/c0"]);
    const done = await cli(
      "resume",
      "row-1",
      "--store",
      store,
      "--json",
      "--approve",
      approve[0] ?? "",
    );
    expect(done.code).toBe(0);

    const opened = SqliteStore.open(store);
    if (!opened.ok) throw opened.error;
    const events = opened.value.auditOf("row-1");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toMatchObject({
      type: "RunStarted",
      payload: { pipelineId: "crash", ctx: { task: "survive crashes" } },
    });
    const exits = events.filter((e) => e.type === "StageExited").map((e) => e.stageExecutionId);
    expect(exits.sort()).toEqual([
      "row-1/left/1",
      "row-1/plan/1",
      "row-1/review/1",
      "row-1/right/1",
    ]);
    expect(opened.value.getRun("row-1")).toMatchObject({ ok: true, value: { status: "done" } });
    opened.value.close();
  }, 30_000);

  it("can be cancelled", async () => {
    const dir = crashProject();
    const store = await killedAtRow(dir, "row-2");
    const cancelled = await cli("cancel", "row-2", "--store", store, "--json");
    expect(cancelled.result).toMatchObject({ runId: "row-2", status: "cancelled" });
    const opened = SqliteStore.open(store);
    if (!opened.ok) throw opened.error;
    expect(opened.value.getRun("row-2")).toMatchObject({
      ok: true,
      value: { status: "cancelled" },
    });
    expect(opened.value.auditOf("row-2").at(-1)?.type).toBe("RunCancelled");
    opened.value.close();
  }, 30_000);
});
