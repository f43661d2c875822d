import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { crashProject, type Life, live } from "../../support/crash-runs.js";
import { noPostgres, sharedStores } from "./support/shared-store.js";

const CHILD = resolve(import.meta.dirname, "../../support/crash-child.mjs");
const stores = sharedStores();

/** Kill points: after the n-th event of a life, wait this long. The child runs the built package. */
const KILLS = [
  [4, 100],
  [3, 250],
  [6, 0],
  [5, 400],
] as const;

const linesOf = (file: string): string[] => {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
};

async function rows(url: string, text: string, values: unknown[]) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(noPostgres)("a run on the shared store killed with SIGKILL", () => {
  it("resumes to done every time: a gapless audit log, one exit per stage execution, no stored call made again", async () => {
    const { url, store } = await stores.fresh();
    const dir = crashProject();
    const args = (mode: string, approve: string[] = []) => ({
      script: CHILD,
      child: [
        ...[mode, url, "crash-1", join(dir, "crash.yaml"), join(dir, "crash.script.yaml")],
        ...[dir, join(dir, "models.log"), ...approve],
      ],
    });
    let kills = 0;
    let lives = 0;
    let last: Life = await live(args("start"), { afterEvents: 4, delayMs: 100 });
    while (last.code !== 0) {
      lives += 1;
      expect(lives).toBeLessThan(30);
      if (last.code === null) kills += 1;
      else expect(last.code, JSON.stringify(last.result)).toBe(3); // suspended on the grant
      const approvals = last.result?.waiting?.map((w) => w.proposalId) ?? [];
      const kill = KILLS[kills];
      last = await live(
        args("resume", approvals),
        kill && { afterEvents: kill[0], delayMs: kill[1] },
      );
    }
    expect(kills).toBeGreaterThanOrEqual(3);

    const run = await store.getRun("crash-1");
    expect(run.ok && run.value.status).toBe("done");
    const events = await store.auditOf("crash-1");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.type).toBe("RunCompleted");
    const exits: Record<string, number> = {};
    for (const e of events) {
      if (e.type === "StageSetup" && e.stageExecutionId) exits[e.stageExecutionId] ??= 0;
      if (e.type === "StageExited" && e.stageExecutionId)
        exits[e.stageExecutionId] = (exits[e.stageExecutionId] ?? 0) + 1;
    }
    expect(exits).toEqual({
      "crash-1/left/1": 1,
      "crash-1/plan/1": 1,
      "crash-1/review/1": 1,
      "crash-1/right/1": 1,
    });

    // A call may be made again only while it was in flight: never once its result was stored.
    const journal = await rows(url, "SELECT key, recorded_at FROM journal WHERE run_id = $1", [
      "crash-1",
    ]);
    const storedAt = new Map(journal.map((row) => [row.key, Date.parse(row.recorded_at)]));
    const after = (at: number, key: string) => at > (storedAt.get(key) ?? Number.POSITIVE_INFINITY);
    const modelRepeats = linesOf(join(dir, "models.log"))
      .map((line) => JSON.parse(line) as { key: string; at: number })
      .filter(({ key, at }) => after(at, key));
    expect(modelRepeats).toEqual([]);
    const approved = events
      .filter((e) => e.type === "ToolApproved")
      .map((e) => [String(e.payload.argsSummary), String(e.payload.proposalId)] as const);
    const toolRuns = linesOf(join(dir, "calls.log")).map((line) => {
      const [at, name] = line.split(" ");
      const proposal = approved.find(([summary]) => summary.includes(String(name)))?.[1];
      return { at: Number(at), name: String(name), proposal };
    });
    expect(toolRuns.filter((t) => !t.proposal)).toEqual([]);
    expect(toolRuns.filter((t) => after(t.at, `tool:crash-1/${t.proposal}`))).toEqual([]);
    for (const name of ["plan-1", "left-1", "left-2", "left-3", "right-1", "right-2", "review-1"])
      expect(toolRuns.map((t) => t.name)).toContain(name);
  }, 180_000);
});
