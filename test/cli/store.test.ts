import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/events/audit.js";
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

/** Replaces a run's latest snapshot (its last step with one, migration 6) by this JSON text. */
const LATEST_SNAPSHOT_UPDATE = `UPDATE steps SET snapshot = ?, snapshot_base = NULL WHERE rowid =
  (SELECT rowid FROM steps WHERE run_id = ? AND snapshot IS NOT NULL ORDER BY step DESC LIMIT 1)`;

const TASK = ["--task", "refactor auth module"];
const EDIT = "    - tool: Edit\n      args: { path: src/auth.ts, old: a, new: b }\n";

/** The run's latest snapshot as the store reads it back (it may be stored as a delta). */
function latestSnapshot(path: string, runId: string): unknown {
  const opened = SqliteStore.open(path);
  if (!opened.ok) throw opened.error;
  try {
    const stored = opened.value.getSnapshot(runId);
    if (!stored.ok) throw stored.error;
    return stored.value.snapshot;
  } finally {
    opened.value.close();
  }
}

async function auditOf(project: string, runId: string): Promise<AuditEvent[]> {
  const audit = await storeCommand(project, "audit", runId, "--json");
  expect(audit.code).toBe(0);
  return JSON.parse(audit.stdout);
}

function expectWholeTrail(events: AuditEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  const exits = events.filter((e) => e.type === "StageExited").map((e) => e.stageExecutionId);
  expect(new Set(exits).size).toBe(exits.length);
}

/** Runs code-review headless with `--on-grant suspend`: Plan's out-of-envelope Edit parks it. */
async function suspendedRun(project: string) {
  const run = await runIn(
    project,
    "run",
    "code-review",
    ...TASK,
    "--headless",
    "--on-grant",
    "suspend",
    "--json",
  );
  expect(run.code).toBe(3);
  const summary = summaryOf(run.stdout);
  expect(summary).toMatchObject({
    status: "suspended",
    waiting: [{ kind: "grant", stageId: "plan", tool: "Edit", argsSummary: "src/auth.ts" }],
  });
  return {
    runId: summary.runId as string,
    proposalId: summary.waiting[0].proposalId as string,
    run,
  };
}

describe("suspended runs", () => {
  it("parks a headless run on a grant request, and resume --approve answers it", async () => {
    const project = demoProject();
    const { runId, proposalId, run } = await suspendedRun(project);
    expect(proposalId).toBe(`${runId}/plan/1/a1/t1/c0`);
    expect(run.stderr).toContain(`stagechart resume ${runId} --approve ${proposalId}`);

    const listed = await storeCommand(project, "runs");
    expect(listed.stdout).toMatch(new RegExp(`^${runId} {2}suspended {2}code-review`, "m"));
    const shown = await storeCommand(project, "show", runId);
    expect(shown.stdout).toContain(`run ${runId} · code-review · suspended`);
    expect(shown.stdout).toContain(`--approve ${proposalId}`);

    const resumed = await storeCommand(project, "resume", runId, "--approve", proposalId, "--json");
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed.stdout).status).toBe("done");

    const events = await auditOf(project, runId);
    expectWholeTrail(events);
    const types = events.map((e) => e.type);
    expect(types.indexOf("RunSuspended")).toBeLessThan(types.indexOf("RunResumed"));
    const grant = events.find((e) => e.type === "GrantIssued");
    expect(grant?.payload).toMatchObject({ proposalId, source: "interactor", by: "command line" });
    const approval = events.find((e) => e.type === "ToolApproved" && e.payload.tool === "Edit");
    expect(approval?.payload).toMatchObject({ proposalId, source: "grant" });
    // The granted Edit ran in Plan, then Execute's identical edit found it already made.
    expect(readFileSync(join(project, "src/auth.ts"), "utf8")).toContain(
      "export const authentication =",
    );
  });

  it("resume --deny gives the model a typed denial and the run goes on", async () => {
    const project = demoProject();
    const { runId, proposalId } = await suspendedRun(project);
    const resumed = await storeCommand(project, "resume", runId, "--deny", proposalId, "--json");
    expect(summaryOf(resumed.stdout).status).toBe("done");
    const events = await auditOf(project, runId);
    expectWholeTrail(events);
    expect(events.find((e) => e.type === "ToolDenied")?.payload).toMatchObject({
      proposalId,
      source: "interactor",
      code: "ToolTerminal/GrantDenied",
    });
  });

  it("refuses an answer to a request the run is not waiting for, and keeps the run resumable", async () => {
    const project = demoProject();
    const { runId, proposalId } = await suspendedRun(project);
    const wrong = await storeCommand(project, "resume", runId, "--approve", "nope", "--json");
    expect(wrong.code).toBe(1);
    expect(summaryOf(wrong.stdout).error).toMatchObject({
      code: "Session/NoPendingGrant",
      message: expect.stringContaining(proposalId),
    });
    const again = await storeCommand(project, "resume", runId, "--json");
    expect(again.code).toBe(3);
    expect(summaryOf(again.stdout).waiting[0].proposalId).toBe(proposalId);
    const done = await storeCommand(project, "resume", runId, "--approve", proposalId);
    expect(done.code).toBe(0);
    expectWholeTrail(await auditOf(project, runId));
  });
});

describe("a run whose root went away", () => {
  it("is not resumed: Validation/RootInvalid naming the root, and the run stays suspended", async () => {
    const project = demoProject();
    const store = join(tempDir(), "runs.db");
    const run = await runCli(
      ...["run", "code-review", ...TASK, "--headless", "--on-grant", "suspend", "--json"],
      ...["--root", project, "--store", store],
    );
    const { runId } = summaryOf(run.stdout);
    rmSync(project, { recursive: true });
    const resumed = await runCli("resume", runId, "--store", store, "--json");
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toMatch(/^Validation\/RootInvalid: /);
    expect(resumed.stderr).toContain(project);
    expect(summaryOf(resumed.stdout)).toMatchObject({
      runId,
      error: { code: "Validation/RootInvalid" },
    });
    const shown = await runCli("show", runId, "--store", store, "--json");
    expect(JSON.parse(shown.stdout).status).toBe("suspended");
  });
});

describe("control commands on a stored run", () => {
  it("cancel ends a suspended run as cancelled (exit 3) and it cannot be resumed", async () => {
    const project = demoProject();
    const { runId } = await suspendedRun(project);
    const cancelled = await storeCommand(project, "cancel", runId, "--json");
    expect(cancelled.code).toBe(3);
    expect(summaryOf(cancelled.stdout).status).toBe("cancelled");
    const events = await auditOf(project, runId);
    expect(events.at(-1)?.type).toBe("RunCancelled");
    expect(events.some((e) => e.type === "StageCancelled" && e.stageId === "plan")).toBe(true);
    const resumed = await storeCommand(project, "resume", runId, "--json");
    expect(summaryOf(resumed.stdout).error.code).toBe("Session/RunFinished");
  });

  it("override moves a suspended run to a reachable stage with the reason audited; an unreachable one is refused", async () => {
    const project = demoProject();
    // Execute asks for Bash outside its envelope, so the run suspends there.
    const script = join(project, "execute-asks.script.yaml");
    writeFileSync(
      script,
      `stages:
  plan: [{ tool: submit_plan, args: { summary: "Rename auth.", steps: [rename] } }]
  execute: [{ tool: Bash, args: { command: "git diff" } }]
  review: [{ tool: submit_review, args: { approved: true, summary: "Fine.", findings: [] } }]
`,
    );
    const run = await runIn(
      project,
      "run",
      "code-review",
      ...TASK,
      "--model",
      `scripted:${script}`,
      "--headless",
      "--on-grant",
      "suspend",
      "--json",
    );
    const { runId, waiting } = summaryOf(run.stdout);
    expect(waiting[0]).toMatchObject({ stageId: "execute", tool: "Bash" });
    const refused = await storeCommand(
      project,
      "override",
      runId,
      "--to",
      "plan",
      "--reason",
      "x",
      "--json",
    );
    expect(refused.code).toBe(1);
    expect(summaryOf(refused.stdout).error.code).toBe("Session/IllegalTransition");
    const moved = await storeCommand(
      project,
      "override",
      runId,
      "--to",
      "review",
      "--reason",
      "reviewed by hand",
      "--json",
    );
    expect(moved.code).toBe(0);
    expect(summaryOf(moved.stdout).status).toBe("done");
    const events = await auditOf(project, runId);
    expectWholeTrail(events);
    expect(events.find((e) => e.type === "OverrideApplied")?.payload).toMatchObject({
      from: "execute",
      to: "review",
      reason: "reviewed by hand",
    });
    expect(events.find((e) => e.type === "StageCancelled")?.stageId).toBe("execute");
  });

  it("a refused override, redo or resume prints the run's real status and audits the refusal, nothing else", async () => {
    const project = demoProject();
    const { runId, proposalId } = await suspendedRun(project);
    const before = await auditOf(project, runId);
    const refusals = [
      ["override", runId, "--to", "nope", "--reason", "try", "--json"],
      ["redo", runId, "review", "--json"],
      ["resume", runId, "--approve", "nope", "--json"],
    ];
    for (const argv of refusals) {
      const refused = await storeCommand(project, ...argv);
      expect(refused.code, argv[0]).toBe(1);
      expect(summaryOf(refused.stdout), argv[0]).toMatchObject({ runId, status: "suspended" });
    }
    const after = (await auditOf(project, runId)).slice(before.length);
    expect(after.map((e) => e.type)).toEqual([
      "RequestRefused",
      "RequestRefused",
      "RequestRefused",
    ]);
    expect(after.map((e) => e.payload)).toEqual([
      {
        control: { type: "OVERRIDE", to: "nope", reason: "try" },
        error: expect.objectContaining({ code: "Session/IllegalTransition" }),
      },
      {
        control: { type: "REDO", stage: "review" },
        error: expect.objectContaining({ code: "Session/IllegalTransition" }),
      },
      {
        answers: [{ proposalId: "nope", decision: "approve" }],
        error: expect.objectContaining({ code: "Session/NoPendingGrant" }),
      },
    ]);
    const runs = JSON.parse((await storeCommand(project, "runs", "--json")).stdout);
    expect(runs[0]).toMatchObject({ runId, status: "suspended" });
    const done = await storeCommand(project, "resume", runId, "--approve", proposalId);
    expect(done.code).toBe(0);
    expectWholeTrail(await auditOf(project, runId));
  });

  it("redo runs the current stage again as a new stage execution", async () => {
    const project = demoProject();
    const { runId } = await suspendedRun(project);
    const redone = await storeCommand(project, "redo", runId, "plan", "--json");
    // The new Plan asks for the same Edit again: a new request, so the run suspends again.
    expect(redone.code).toBe(3);
    const waiting = summaryOf(redone.stdout).waiting;
    expect(waiting[0].stageExecutionId).toBe(`${runId}/plan/2`);
    const events = await auditOf(project, runId);
    expectWholeTrail(events);
    expect(events.some((e) => e.type === "SMTransition" && e.payload.kind === "redo")).toBe(true);
  });
});

describe("reading the store", () => {
  it("runs, show and audit describe a finished run, as text and JSON", async () => {
    const project = demoProject();
    const run = await runIn(project, "run", "code-review", ...TASK, "--headless", "--json");
    const { runId } = summaryOf(run.stdout);
    const runs = JSON.parse((await storeCommand(project, "runs", "--json")).stdout);
    expect(runs).toEqual([
      expect.objectContaining({ runId, status: "done", pipelineId: "code-review" }),
    ]);
    const shown = JSON.parse((await storeCommand(project, "show", runId, "--json")).stdout);
    expect(shown).toMatchObject({ runId, status: "done", state: "done" });
    expect(shown.stages.map((s: { stageId: string }) => s.stageId)).toEqual([
      "plan",
      "execute",
      "review",
    ]);
    const text = (await storeCommand(project, "show", runId)).stdout;
    expect(text).toContain(`${runId}/review/1  ok`);
    const audit = (await storeCommand(project, "audit", runId)).stdout.split("\n");
    expect(audit[0]).toMatch(/^ {3}1 \S+ RunStarted /);
    expect(audit.at(-2)).toMatch(/RunCompleted/);
  });

  it("show names the parallel group a run waits in by its siblings, not by its compiled state", async () => {
    const project = demoProject();
    // Plan asks for nothing; lint asks for Edit, outside its envelope: headless, the run parks
    // inside the group.
    const script = readFileSync(
      join(REPO_ROOT, "machines/code-review-parallel.script.yaml"),
      "utf8",
    )
      .replace(/ {4}- tool: Edit\n.*\n(?= {4}- tool: Grep)/, "")
      .replace(/ {4}- tool: Read\n.*\n(?= {4}- tool: submit_lint)/, EDIT);
    writeFileSync(join(project, "grant.script.yaml"), script);
    const run = await runIn(
      project,
      ...["run", "code-review-parallel", ...TASK, "--headless", "--on-grant", "suspend"],
      ...["--model", `scripted:${join(project, "grant.script.yaml")}`, "--json"],
    );
    expect(run.code).toBe(3);
    const { runId } = summaryOf(run.stdout);
    const shown = JSON.parse((await storeCommand(project, "show", runId, "--json")).stdout);
    expect(shown).toMatchObject({
      status: "suspended",
      state: "execute_parallel",
      group: "test ∥ lint",
    });
    const text = (await storeCommand(project, "show", runId)).stdout;
    expect(text).toContain('state: "test ∥ lint" (parallel group)\n');
    expect(text).not.toContain("execute_parallel");
  });

  it("runs lists a page: the latest 50 unless told, --limit, --status, --all, slim JSON rows", async () => {
    const project = demoProject();
    const opened = SqliteStore.open(storeOf(project));
    if (!opened.ok) throw opened.error;
    for (let i = 1; i <= 55; i++) {
      const runId = `run-${String(i).padStart(2, "0")}`;
      opened.value.createRun({ runId, pipelineId: "p", definitionHash: "h", options: { i } });
      if (i % 5 === 0) opened.value.updateRun(runId, { status: "failed" });
    }
    opened.value.close();

    const text = (await storeCommand(project, "runs")).stdout.trim().split("\n");
    expect(text).toHaveLength(51);
    expect(text[0]).toMatch(/^run-55 {2}failed/);
    expect(text.at(-1)).toBe("(only the latest 50 shown: --limit <n> or --all for more)");
    expect((await storeCommand(project, "runs", "--all")).stdout.trim().split("\n")).toHaveLength(
      55,
    );

    const failed = JSON.parse(
      (await storeCommand(project, "runs", "--status", "failed", "--limit", "3", "--json")).stdout,
    );
    expect(failed.map((r: { runId: string }) => r.runId)).toEqual(["run-55", "run-50", "run-45"]);
    expect(Object.keys(failed[0]).sort()).toEqual([
      "createdAt",
      "pipelineId",
      "runId",
      "status",
      "updatedAt",
    ]);

    const refused = await storeCommand(project, "runs", "--limit", "0");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--limit <n>.*invalid.*a whole number, 1 or more/);
  });

  it("names a run that is not there, and an empty store", async () => {
    const project = demoProject();
    expect((await storeCommand(project, "runs")).stdout).toBe(
      `no runs yet (no store at ${storeOf(project)})\n`,
    );
    const created = SqliteStore.open(storeOf(project));
    if (created.ok) created.value.close();
    expect((await storeCommand(project, "runs")).stdout).toBe("no runs yet\n");
    const missing = await storeCommand(project, "show", "run-nope", "--json");
    expect(missing.code).toBe(1);
    expect(summaryOf(missing.stdout).error.code).toBe("Session/RunNotFound");
    const resume = await storeCommand(project, "resume", "run-nope");
    expect(resume.stderr).toContain("Session/RunNotFound");
  });
});

describe("a damaged store", () => {
  it("names a corrupt or unusable snapshot on resume, and keeps the audit log readable", async () => {
    const project = demoProject();
    const { runId } = await suspendedRun(project);
    const db = new Database(storeOf(project));
    const corrupt = (text: string) => db.prepare(LATEST_SNAPSHOT_UPDATE).run(text, runId);

    corrupt("{not json");
    const broken = await storeCommand(project, "resume", runId, "--json");
    expect(broken.code).toBe(1);
    expect(summaryOf(broken.stdout).error.code).toBe("Session/SnapshotCorrupt");

    corrupt(
      JSON.stringify({ status: "active", value: "no-such-state", context: {}, children: {} }),
    );
    const unusable = await storeCommand(project, "resume", runId, "--json");
    expect(unusable.code).toBe(1);
    expect(summaryOf(unusable.stdout).error.code).toBe("Session/SnapshotCorrupt");

    db.prepare("UPDATE steps SET snapshot = NULL WHERE run_id = ?").run(runId);
    const missing = await storeCommand(project, "resume", runId, "--json");
    expect(summaryOf(missing.stdout).error.code).toBe("Session/NoSnapshot");
    db.close();

    const events = await auditOf(project, runId);
    expect(events.at(-1)?.type).toBe("RunSuspended");
    expectWholeTrail(events);
  });

  it("refuses every damaged snapshot shape as Session/SnapshotCorrupt, naming the run, and writes nothing", async () => {
    const project = demoProject();
    const { runId, proposalId } = await suspendedRun(project);
    const db = new Database(storeOf(project));
    const original = JSON.stringify(latestSnapshot(storeOf(project), runId));
    const before = await auditOf(project, runId);
    /** The stored snapshot with the value at `path` replaced. */
    const edited = (path: string[], value: unknown) => {
      const snapshot = JSON.parse(original);
      const last = path.pop() as string;
      const parent = path.reduce((at, key) => at[key] as Record<string, unknown>, snapshot);
      parent[last] = value;
      return JSON.stringify(snapshot);
    };
    const stage = ["children", "plan", "snapshot"];
    const damaged = {
      null: "null",
      false: "false",
      zero: "0",
      "a list": "[]",
      "no children": edited(["children"], {}),
      "a null context": edited(["context"], null),
      "visits as text": edited(["context", "visits"], "plan"),
      "another run's": edited(["context", "runId"], "run-other"),
      "a stage without its context": edited([...stage, "context"], null),
      "a stage whose batch is not a list": edited([...stage, "context", "batch"], 7),
      "a stage whose state lost its actor": edited([...stage, "value"], "assert"),
    };
    for (const [what, text] of Object.entries(damaged)) {
      db.prepare(LATEST_SNAPSHOT_UPDATE).run(text, runId);
      const resumed = await storeCommand(
        project,
        "resume",
        runId,
        "--approve",
        proposalId,
        "--json",
      );
      expect(resumed.code, what).toBe(1);
      expect(summaryOf(resumed.stdout), what).toMatchObject({
        runId,
        status: "suspended",
        error: {
          code: "Session/SnapshotCorrupt",
          message: expect.stringContaining(`run ${runId}`),
        },
      });
      const cancelled = await storeCommand(project, "cancel", runId, "--json");
      expect(summaryOf(cancelled.stdout).error.code, what).toBe("Session/SnapshotCorrupt");
    }
    expect(await auditOf(project, runId)).toEqual(before);
    db.prepare(LATEST_SNAPSHOT_UPDATE).run(original, runId);
    db.close();
    const done = await storeCommand(project, "resume", runId, "--approve", proposalId);
    expect(done.code).toBe(0);
  });

  it("shows and audits the rest of a run around a damaged audit event, marking it", async () => {
    const project = demoProject();
    const { runId } = await suspendedRun(project);
    const db = new Database(storeOf(project));
    // Damage as a broken disk would: past the store's own guard of the append-only log.
    const triggers = db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'");
    for (const name of triggers.pluck().all()) db.exec(`DROP TRIGGER "${name}"`);
    // A step's events are a list, or `{shared, events}` when they share fields.
    const list = "CASE json_type(events) WHEN 'array' THEN '$' ELSE '$.events' END";
    const count = `json_array_length(events, ${list})`;
    const damage = (seq: number, field: string, value: string) =>
      db
        .prepare(
          `UPDATE steps SET events = json_set(events, ${list} || '[' || CAST(? - 1 - (last_seq -
             ${count}) AS INTEGER) || '].${field}', ?)
           WHERE run_id = ? AND last_seq >= ? AND last_seq - ${count} < ?`,
        )
        .run(seq, value, runId, seq, seq);
    damage(2, "payload", "{cut");
    damage(3, "type", "Nonsense");
    const total = db.prepare("SELECT MAX(last_seq) FROM steps WHERE run_id = ?").pluck().get(runId);
    db.close();
    const warning = `Session/StoreCorrupt: the store is damaged: run ${runId}'s audit log has damaged events (seq 2, 3), shown marked DAMAGED\n`;

    const audit = await storeCommand(project, "audit", runId, "--json");
    expect(audit).toMatchObject({ code: 0, stderr: warning });
    const events: (AuditEvent & { damaged?: string })[] = JSON.parse(audit.stdout);
    expect(events).toHaveLength(total as number);
    expect(events[1]).toMatchObject({
      seq: 2,
      damaged: `run ${runId}'s audit event 2: its payload is not a JSON object`,
    });
    expect(events[2]?.damaged).toBe(
      `run ${runId}'s audit event 3: its type "Nonsense" is not an audit event type`,
    );
    expect(events.filter((e) => e.damaged)).toHaveLength(2);
    expect(events.at(-1)?.type).toBe("RunSuspended");

    const text = await storeCommand(project, "audit", runId);
    expect(text.stdout).toMatch(/^ {3}2 \S+ DAMAGED: .*payload is not a JSON object$/m);
    expect(text.stdout).toMatch(/RunSuspended/);
    const shown = await storeCommand(project, "show", runId);
    expect(shown).toMatchObject({ code: 0, stderr: warning });
    expect(shown.stdout).toMatch(/^ {5}2 {2}\S+ {2}DAMAGED: .*payload is not a JSON object$/m);
    expect(shown.stdout).toContain(`run ${runId} · code-review · suspended`);
  });

  it("names a damaged run row instead of crashing", async () => {
    const project = demoProject();
    const { runId } = await suspendedRun(project);
    const db = new Database(storeOf(project));
    db.prepare("UPDATE runs SET options = '{bad' WHERE run_id = ?").run(runId);
    db.close();
    const show = await storeCommand(project, "show", runId);
    expect(show.code).toBe(1);
    expect(show.stderr).toContain(
      `Session/StoreCorrupt: the store is damaged: run ${runId}'s options`,
    );
  });

  it.skipIf(process.getuid?.() === 0)(
    "names a store in a directory it may not enter StoreUnavailable, not absent (not as root: root enters any)",
    async () => {
      const project = demoProject();
      await suspendedRun(project);
      const directory = join(project, ".stagechart");
      chmodSync(directory, 0o000);
      try {
        for (const command of [["runs"], ["show", "r-1"], ["resume", "r-1"]]) {
          const refused = await storeCommand(project, ...command);
          expect(refused.code).toBe(1);
          expect(refused.stderr).toContain(
            `Session/StoreUnavailable: cannot open the store at ${storeOf(project)}`,
          );
        }
      } finally {
        chmodSync(directory, 0o755);
      }
    },
  );

  it("names a malformed database page Session/StoreCorrupt, with exit 1", async () => {
    const project = demoProject();
    const { runId } = await suspendedRun(project);
    const path = storeOf(project);
    const db = new Database(path);
    db.pragma("wal_checkpoint(TRUNCATE)");
    // The runs table and its indexes (the listing reads only an index): one page each here.
    const roots = db
      .prepare<[], number>("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'runs'")
      .pluck()
      .all();
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    db.close();
    const bytes = readFileSync(path);
    for (const root of roots) bytes.fill(0xa5, (root - 1) * pageSize, root * pageSize);
    writeFileSync(path, bytes);
    for (const command of [["runs"], ["show", runId], ["resume", runId]]) {
      const shown = await storeCommand(project, ...command);
      expect(shown.code).toBe(1);
      expect(shown.stderr).toMatch(
        /^Session\/StoreCorrupt: the store at .* is damaged: database disk image is malformed\n/,
      );
    }
  });
});

/**
 * A step of the run's own, after its last, holding one journal entry: `@key` with `value`; keyed
 * as the store keys a step (its run's position and its number).
 */
const entryStep = (runId: string, value: string) =>
  `INSERT INTO steps (id, run_id, step, last_seq, at, journal, journal_mark, transcript_mark)
   SELECT ((SELECT position FROM runs WHERE run_id = '${runId}') << 32) + MAX(step) + 1,
     run_id, MAX(step) + 1, MAX(last_seq), MAX(at), json_array(json_array(@key, json('${value}'))), 0, 0
   FROM steps WHERE run_id = '${runId}'`;

const MEND_ENTRY_STEP = `UPDATE steps SET journal = NULL
  WHERE events IS NULL AND journal IS NOT NULL AND json_extract(journal, '$[0][0]') = @key`;

/** Writes `entry` over the transcript entry `@key` of the run's plan stage, in its step's row. */
const transcriptEntry = (runId: string, entry: string) =>
  `UPDATE steps SET transcripts = (
     SELECT json_group_array(CASE WHEN t.value ->> 0 = '${runId}/plan/1' AND t.value ->> 1 = @key
       THEN json_set(t.value, '$[2]', json('${entry}')) ELSE json(t.value) END)
     FROM json_each(steps.transcripts) t)
   WHERE run_id = '${runId}' AND EXISTS (SELECT 1 FROM json_each(steps.transcripts) t
     WHERE t.value ->> 0 = '${runId}/plan/1' AND t.value ->> 1 = @key)`;

describe("a damaged journal or transcript row of the call in flight", () => {
  /**
   * Each damage, as a failing disk would leave it, and how to mend it. The damaged tool row stops
   * the approved call before it runs: the grant is still to answer after. A damaged model or
   * transcript row stops the turn after the granted Edit, which ran and was stored.
   */
  const damages = {
    "the tool's recorded result": (runId: string, proposalId: string) => ({
      key: `tool:${runId}/${proposalId}`,
      damage: entryStep(runId, '{"ok":1}'),
      mend: MEND_ENTRY_STEP,
      answerAgain: true,
    }),
    "the model's recorded reply": (runId: string) => ({
      key: `model:${runId}/${runId}/plan/1/1`,
      damage: entryStep(runId, "null"),
      mend: MEND_ENTRY_STEP,
      answerAgain: false,
    }),
    "a transcript entry": (runId: string) => ({
      key: "000000.000000.000000.000000",
      damage: transcriptEntry(runId, '{"role":"system"}'),
      mend: transcriptEntry(runId, '{"role":"system","text":"mended"}'),
      answerAgain: false,
    }),
  };

  it.each(Object.keys(damages))(
    "stops the run with Session/StoreCorrupt naming %s; once mended, resume finishes it",
    async (what) => {
      const project = demoProject();
      const { runId, proposalId } = await suspendedRun(project);
      const { key, damage, mend, answerAgain } = damages[what as keyof typeof damages](
        runId,
        proposalId,
      );
      const db = new Database(storeOf(project));
      // The damage comes from outside the store: past the trigger that keeps steps as written.
      db.exec("DROP TRIGGER steps_events_no_update");
      expect(db.prepare(damage).run({ key }).changes).toBe(1);

      const broken = await storeCommand(
        project,
        "resume",
        runId,
        "--approve",
        proposalId,
        "--json",
      );
      expect(broken.code).toBe(1);
      const told = broken.stderr.split("\n").find((line) => line.startsWith("Session/"));
      expect(told).toMatch(/^Session\/StoreCorrupt: the store is damaged: /);
      expect(told).toContain(key);
      expect(told).toContain(`(run ${runId} is kept as stored, to resume)`);
      expect(summaryOf(broken.stdout).error).toMatchObject({
        code: "Session/StoreCorrupt",
        message: expect.stringContaining(key),
      });
      const runs = JSON.parse((await storeCommand(project, "runs", "--json")).stdout);
      expect(runs[0]).toMatchObject({ runId, status: "suspended" });
      const types = (await auditOf(project, runId)).map((e) => e.type);
      expect(types).not.toContain("ToolFailed");
      expect(types).not.toContain("RunFailed");

      db.prepare(mend).run({ key });
      db.close();
      const answer = answerAgain ? ["--approve", proposalId] : [];
      const again = await storeCommand(project, "resume", runId, ...answer, "--json");
      expect(summaryOf(again.stdout).status).toBe("done");
      expectWholeTrail(await auditOf(project, runId));
    },
  );
});
