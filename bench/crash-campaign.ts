/**
 * The crash campaign: runs of the crash project (test/support/crash-runs.ts) SIGKILLed at random
 * points — after a random number of events plus a random delay, and every fifth run (the first
 * included) the instant its row is inserted — and resumed after each kill, alternately by the child and by
 * the real `stagechart resume`, until they end. Then, over every run: how many ended done, with
 * a gapless audit log, with one `StageExited` per stage execution; how many completed tool calls
 * ran again and how many journaled model replies were asked for again (both must be 0).
 *
 *   npm run crash-campaign     (builds, then runs this under vitest)
 *
 * `CRASH_KILLS` (default 100) is the least number of kills; figures go to stdout and
 * bench/results/crash-campaign.json. It takes a few minutes, so it is not part of `npm test`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import {
  type CrashFacts,
  childArgs,
  crashFacts,
  crashProject,
  type Life,
  live,
} from "../test/support/crash-runs.js";

const KILLS = Number(process.env.CRASH_KILLS ?? 100);
/** Kills per run, at most: the last life of a run is never killed. */
const KILLS_PER_RUN = 6;
/** Every this many runs, one is killed the instant its row is inserted. */
const ROW_INSTANT_EVERY = 5;

const randomInt = (below: number) => Math.floor(Math.random() * below);

interface CampaignRun {
  runId: string;
  kills: number;
  killedAtRow: boolean;
  lives: number;
  facts: CrashFacts;
}

/** One run, killed `kills` times at random points, then resumed to its end. */
async function killedRun(runId: string, kills: number, atRow: boolean): Promise<CampaignRun> {
  const dir = crashProject();
  const randomKill = () => ({ afterEvents: 1 + randomInt(12), delayMs: randomInt(700) });
  let killed = 0;
  let lives = 1;
  let last: Life = atRow
    ? await live({ child: childArgs("start-killed-at-row", dir, runId) })
    : await live({ child: childArgs("start", dir, runId) }, randomKill());
  // Resumes until a life ends on its own with the run over (0) or failed (1); 3 is a suspension.
  while (last.code === null || last.code === 3) {
    if (last.code === null) killed += 1;
    if (lives > 60) break;
    const approve = last.result?.waiting?.map((w) => w.proposalId) ?? [];
    const kill = killed < kills ? randomKill() : undefined;
    const how =
      lives % 2 === 0
        ? {
            cli: [
              "resume",
              runId,
              "--store",
              join(dir, "runs.db"),
              "--headless",
              "--json",
              ...approve.flatMap((id) => ["--approve", id]),
            ],
          }
        : { child: childArgs("resume", dir, runId, approve) };
    last = await live(how, kill);
    lives += 1;
  }
  return { runId, kills: killed, killedAtRow: atRow, lives, facts: crashFacts(dir, runId) };
}

const gapless = ({ seqs }: CrashFacts) => seqs.every((seq, i) => seq === i + 1);
const exitsOnce = ({ exits }: CrashFacts) => Object.values(exits).every((n) => n === 1);

function figures(runs: CampaignRun[]) {
  return {
    runs: runs.length,
    kills: runs.reduce((sum, r) => sum + r.kills, 0),
    killedTheInstantTheRowAppeared: runs.filter((r) => r.killedAtRow).length,
    resumedToDone: runs.filter((r) => r.facts.status === "done").length,
    gaplessAuditLogs: runs.filter((r) => gapless(r.facts)).length,
    oneStageExitedPerStageExecution: runs.filter((r) => exitsOnce(r.facts)).length,
    completedToolCallsRunAgain: runs.reduce((sum, r) => sum + r.facts.toolRepeats.length, 0),
    journaledModelRepliesRequestedAgain: runs.reduce(
      (sum, r) => sum + r.facts.modelRepeats.length,
      0,
    ),
    notDone: runs
      .filter((r) => r.facts.status !== "done" || !gapless(r.facts) || !exitsOnce(r.facts))
      .map(({ runId, kills, lives, facts }) => ({
        runId,
        kills,
        lives,
        status: facts.status,
        lastEvent: facts.lastEvent,
      })),
  };
}

it(`the crash campaign: at least ${KILLS} SIGKILLs, every run resumed to done`, async () => {
  const runs: CampaignRun[] = [];
  let kills = 0;
  while (kills < KILLS) {
    const atRow = runs.length % ROW_INSTANT_EVERY === 0;
    const run = await killedRun(`crash-${runs.length + 1}`, 1 + randomInt(KILLS_PER_RUN), atRow);
    runs.push(run);
    kills += run.kills;
    process.stdout.write(
      `${run.runId}: ${run.kills} kills${atRow ? " (one at the row)" : ""}, ${run.lives} lives, ${run.facts.status}\n`,
    );
  }
  const result = figures(runs);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(
    join(import.meta.dirname, "results/crash-campaign.json"),
    `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`,
  );
  expect(result.notDone).toEqual([]);
  expect(result.completedToolCallsRunAgain).toBe(0);
  expect(result.journaledModelRepliesRequestedAgain).toBe(0);
}, 3_600_000);
