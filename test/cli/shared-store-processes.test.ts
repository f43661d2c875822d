import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/events/audit.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { runCli } from "../support/cli.js";
import { crashProject, type Life, live } from "../support/crash-runs.js";
import { noPostgres, testPostgres } from "../support/postgres.js";

// The processes here run the built package (bin/stagechart.js): `npm run build` first.
const skip = noPostgres;
const postgres = testPostgres();

/** `stagechart run` of the crash project (crash-runs.ts) on the shared store, in a process of its own. */
const runArgs = (dir: string, runId: string, url: string) => [
  ...["run", join(dir, "crash.yaml"), "--task", "survive crashes", "--run-id", runId],
  ...["--model", `scripted:${join(dir, "crash.script.yaml")}`, "--root", dir, "--store", url],
  ...["--headless", "--on-grant", "suspend", "--json"],
];

async function auditOf(url: string, runId: string): Promise<AuditEvent[]> {
  const audit = await runCli("audit", runId, "--store", url, "--json");
  expect(audit.code).toBe(0);
  return JSON.parse(audit.stdout);
}

/** Until `ready` holds of the shared store (another process is getting there). */
async function until(url: string, ready: (store: PostgresStore) => Promise<boolean>) {
  const opened = await PostgresStore.open(url);
  if (!opened.ok) throw opened.error;
  try {
    while (!(await ready(opened.value))) await new Promise((r) => setTimeout(r, 50));
  } finally {
    await opened.value.close();
  }
}

describe.skipIf(skip)("runs on a PostgreSQL store across processes", () => {
  it("resumes a run whose process was SIGKILLed mid-run to done: gapless log, each stage exited once", async () => {
    const dir = crashProject();
    const url = await postgres().createDatabase();
    // Plan asks for Bash outside its envelope: the run parks on that grant first.
    const parked = await live({ cli: runArgs(dir, "crash-pg", url) });
    expect(parked.code).toBe(3);
    const approve = parked.result?.waiting?.map((w) => w.proposalId) ?? [];
    expect(approve).toEqual(["crash-pg/plan/1/a1/t1/c0"]);
    // Resumed in another process with the grant, which is SIGKILLed in the parallel stages.
    const resume = ["resume", "crash-pg", "--store", url, "--headless", "--json"];
    const killed: Life = await live(
      { cli: [...resume, "--approve", approve[0] as string] },
      { afterEvents: 6, delayMs: 100 },
    );
    expect(killed.code).toBeNull();

    let approvals: string[] = [];
    let resumed = { code: 3, stdout: "" };
    for (let lives = 0; resumed.code === 3; lives += 1) {
      expect(lives).toBeLessThan(5);
      resumed = await runCli(...resume, ...approvals.flatMap((id) => ["--approve", id]));
      const summary = JSON.parse(resumed.stdout.trim().split("\n").at(-1) as string);
      approvals = (summary.waiting ?? []).map((w: { proposalId: string }) => w.proposalId);
    }
    expect(resumed.code).toBe(0);

    const events = await auditOf(url, "crash-pg");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const exits = events.filter((e) => e.type === "StageExited").map((e) => e.stageExecutionId);
    expect(new Set(exits)).toEqual(
      new Set(["crash-pg/plan/1", "crash-pg/left/1", "crash-pg/right/1", "crash-pg/review/1"]),
    );
    expect(exits).toHaveLength(4);
    expect(events.at(-1)?.type).toBe("RunCompleted");
  }, 60_000);

  it("cancels a run that `stagechart run` in another process owns: that process applies it", async () => {
    const dir = crashProject();
    // Plan's first model turn takes a minute: the run is live in its process meanwhile.
    writeFileSync(
      join(dir, "crash.script.yaml"),
      "stages:\n  plan:\n    - { text: thinking, delayMs: 60000 }\n",
    );
    const url = await postgres().createDatabase();
    const running = live({ cli: runArgs(dir, "live-pg", url) });
    await until(url, async (store) => {
      const entered = (await store.auditOf("live-pg")).some((e) => e.type === "StageSetup");
      return entered && (await store.leaseHolder("live-pg")) !== undefined;
    });

    const cancelled = await runCli("cancel", "live-pg", "--store", url, "--json");
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ control: "CANCEL", outcome: "applied" });
    const owner = await running;
    expect(owner.result).toMatchObject({ runId: "live-pg", status: "cancelled" });
    const events = await auditOf(url, "live-pg");
    expect(events.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      control: { type: "CANCEL" },
      requestedBy: { pid: process.pid },
    });
    expect(events.at(-1)?.type).toBe("RunCancelled");
  }, 60_000);
});
