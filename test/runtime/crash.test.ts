import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { childArgs, crashFacts, crashProject, type Life, live } from "../support/crash-runs.js";

const CHILD = resolve(import.meta.dirname, "../support/crash-child.mjs");

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
              `${dir}/runs.db`,
              "--headless",
              "--json",
              ...approve.flatMap((id) => ["--approve", id]),
            ],
          }
        : { child: childArgs("resume", dir, "crash-1", approve) };
    let last: Life = await live(
      { child: childArgs("start", dir, "crash-1") },
      { afterEvents: 4, delayMs: 100 },
    );
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

    const facts = crashFacts(dir, "crash-1");
    expect(facts.seqs).toEqual(facts.seqs.map((_, i) => i + 1));
    expect(facts.exits).toEqual({
      "crash-1/left/1": 1,
      "crash-1/plan/1": 1,
      "crash-1/review/1": 1,
      "crash-1/right/1": 1,
    });
    expect(facts.lastEvent).toBe("RunCompleted");
    expect(facts.status).toBe("done");
    expect(facts.modelRepeats).toEqual([]);
    expect(facts.toolRepeats).toEqual([]);
    expect(facts.toolsUnaccounted).toEqual([]);
    for (const name of ["plan-1", "left-1", "left-2", "left-3", "right-1", "right-2", "review-1"])
      expect(facts.toolRuns).toContain(name);
  }, 120_000);
});

describe("two processes on one run", () => {
  it("a second process is refused with Session/RunLocked while the first lives, and takes over once it is killed", async () => {
    const dir = crashProject();
    const args = (mode: string) => childArgs(mode, dir, "locked-1");
    const parked = await live({ child: args("start") });
    const approve = parked.result?.waiting?.map((w) => w.proposalId) ?? [];
    expect(approve).toHaveLength(1);
    // The first process holds its first model request unanswered: it lives, owning the run, until
    // it is killed, so the second cannot find the run finished instead of locked.
    const first = spawn(process.execPath, [CHILD, ...args("resume-held"), ...approve], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: first.stdout as NodeJS.ReadableStream });
    await new Promise<void>((ready) => lines.on("line", (l) => l.startsWith("H ") && ready()));

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
  /** Nothing of the run is stored but its row: the earliest moment a crash can leave it. */
  const killedAtRow = async (dir: string, runId: string) => {
    const killed = await live({ child: childArgs("start-killed-at-row", dir, runId) });
    expect(killed.code).toBeNull();
    expect(killed.events).toEqual([]);
  };
  const cli = (dir: string, ...argv: string[]) =>
    live({ cli: [...argv, "--store", `${dir}/runs.db`, "--json"] });

  it("is resumed from its beginning, with its id, context and options, to done", async () => {
    const dir = crashProject();
    await killedAtRow(dir, "row-1");
    const parked = await cli(dir, "resume", "row-1", "--headless");
    expect(parked.code, JSON.stringify(parked.result)).toBe(3);
    const approve = parked.result?.waiting?.map((w) => w.proposalId);
    expect(approve).toEqual(["row-1/plan/1/a1/t1/c0"]);
    const done = await cli(dir, "resume", "row-1", "--approve", "row-1/plan/1/a1/t1/c0");
    expect(done.code).toBe(0);

    const facts = crashFacts(dir, "row-1");
    expect(facts.status).toBe("done");
    expect(facts.seqs).toEqual(facts.seqs.map((_, i) => i + 1));
    expect(facts.exits).toEqual({
      "row-1/left/1": 1,
      "row-1/plan/1": 1,
      "row-1/review/1": 1,
      "row-1/right/1": 1,
    });
    expect(facts.firstEvent).toMatchObject({
      type: "RunStarted",
      payload: { pipelineId: "crash", ctx: { task: "survive crashes" }, restart: true },
    });
  }, 30_000);

  it("can be cancelled", async () => {
    const dir = crashProject();
    await killedAtRow(dir, "row-2");
    const cancelled = await cli(dir, "cancel", "row-2");
    expect(cancelled.result).toMatchObject({ runId: "row-2", status: "cancelled" });
    const facts = crashFacts(dir, "row-2");
    expect(facts).toMatchObject({ status: "cancelled", lastEvent: "RunCancelled" });
  }, 30_000);
});
