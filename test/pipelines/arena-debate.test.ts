import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type Argument,
  anotherPass,
  DEFAULT_SETTINGS,
  decide,
  duels,
  START_RATING,
  type Tally,
  tally,
  weightOf,
} from "../../machines/arena-debate/consensus.js";
import { NS, ratingsBefore, similarity, storeDebate } from "../../machines/arena-debate/memory.js";
import type { DebateRecord } from "../../machines/arena-debate/record.js";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { BUNDLED_MACHINES } from "../../src/paths.js";
import { HostMemory } from "../../src/runtime/memory.js";
import { SqliteStore } from "../../src/store/index.js";
import {
  arenaScript,
  arenaScriptVariant,
  arenaWorkspace,
  planTurn,
  runArena,
  transitionsOf,
} from "../support/arena-debate.js";
import { storeOf, summaryOf } from "../support/cli.js";

const ratings = {
  analyst: START_RATING,
  solution: START_RATING,
  critic: START_RATING,
  security: START_RATING,
  optimizer: START_RATING,
};
const arg = (role: Argument["role"], stance: Argument["stance"], confidence: number): Argument => ({
  role,
  pass: 1,
  stance,
  confidence,
  argument: `${role} says ${stance}`,
});
const at = (consensus: number, veto?: number): Tally => ({
  consensus,
  pro: consensus,
  contra: 1 - consensus,
  conflicts: [],
  ...(veto !== undefined && { veto }),
});

describe("the arena debate's thresholds, at their edges", () => {
  it("re-debates while consensus is below 0.8 and fewer than 3 passes have run", () => {
    expect(anotherPass(at(0.79), 1, DEFAULT_SETTINGS)).toBe(true);
    expect(anotherPass(at(0.8), 1, DEFAULT_SETTINGS)).toBe(false);
    expect(anotherPass(at(0.79), 2, DEFAULT_SETTINGS)).toBe(true);
    expect(anotherPass(at(0.79), 3, DEFAULT_SETTINGS)).toBe(false);
    expect(anotherPass(at(0.1, 0.95), 1, DEFAULT_SETTINGS)).toBe(false);
  });

  it("rejects consensus below 0.6 and proceeds from 0.6", () => {
    expect(decide(at(0.59), DEFAULT_SETTINGS).decision).toBe("REJECT");
    expect(decide(at(0.6), DEFAULT_SETTINGS).decision).toBe("PROCEED");
  });

  it("a Security objection vetoes from confidence 0.9, not at 0.89, whatever the consensus", () => {
    const debate = (security: number) => [
      arg("analyst", "pro", 1),
      arg("solution", "pro", 1),
      arg("optimizer", "pro", 1),
      arg("security", "contra", security),
    ];
    const below = tally(debate(0.89), ratings, DEFAULT_SETTINGS);
    const vetoed = tally(debate(0.9), ratings, DEFAULT_SETTINGS);
    expect(below.veto).toBeUndefined();
    expect(vetoed.veto).toBe(0.9);
    expect(decide(vetoed, DEFAULT_SETTINGS).decision).toBe("REJECT");
    expect(decide({ ...vetoed, consensus: 0.99 }, DEFAULT_SETTINGS).decision).toBe("REJECT");
    expect(decide({ ...below, consensus: 0.6 }, DEFAULT_SETTINGS).decision).toBe("PROCEED");
  });

  it("the thresholds are settings: another set moves each edge", () => {
    const settings = {
      consensusTarget: 0.5,
      maxPasses: 1,
      vetoConfidence: 0.99,
      minConsensus: 0.3,
    };
    expect(anotherPass(at(0.49), 0, settings)).toBe(true);
    expect(anotherPass(at(0.49), 1, settings)).toBe(false);
    expect(decide(at(0.3), settings).decision).toBe("PROCEED");
    expect(tally([arg("security", "contra", 0.98)], ratings, settings).veto).toBeUndefined();
  });
});

describe("the arena debate's consensus maths", () => {
  it("weighs each role's latest vote by role weight, Elo (clamped) and accuracy", () => {
    expect(weightOf("security", START_RATING)).toBe(2);
    expect(weightOf("critic", { rating: 1320, matches: 0, successes: 0 })).toBeCloseTo(1.65);
    expect(weightOf("critic", { rating: 3000, matches: 0, successes: 0 })).toBeCloseTo(2.25);
    expect(weightOf("solution", { rating: 1200, matches: 4, successes: 4 })).toBeCloseTo(1.8);
    const result = tally(
      [
        arg("analyst", "pro", 0.8),
        arg("critic", "contra", 0.6),
        { ...arg("critic", "pro", 0.5), pass: 2 },
      ],
      ratings,
      DEFAULT_SETTINGS,
    );
    // The critic's second-pass vote replaces its first: 0.8 × 1.0 pro, 0.5 × 1.5 pro.
    expect(result).toMatchObject({ consensus: 1, pro: 1.55, contra: 0 });
  });

  it("a Security objection at 0.8 or more is a conflict weighing five times its confidence more", () => {
    const result = tally(
      [arg("analyst", "pro", 1), arg("security", "contra", 0.8)],
      ratings,
      DEFAULT_SETTINGS,
    );
    expect(result.contra).toBeCloseTo(0.8 * 2 + 0.8 * 5);
    expect(result.conflicts).toHaveLength(1);
  });

  it("the duels: a Critic objection above 0.7 gives it 10 and takes 5 from Solution; Security's at 0.8 gives it 20", () => {
    expect(duels([arg("critic", "contra", 0.7), arg("security", "contra", 0.79)])).toEqual({});
    expect(
      duels([
        arg("critic", "contra", 0.71),
        arg("critic", "contra", 0.9),
        arg("security", "contra", 0.8),
      ]),
    ).toEqual({
      critic: 20,
      solution: -10,
      security: 20,
    });
  });

  it("storing a run's debate again (a resume after a crash) changes no rating further", async () => {
    const memory = new HostMemory();
    const record = {
      traceId: "trace-1",
      task: "t",
      arguments: [arg("critic", "contra", 0.8), arg("solution", "pro", 0.9)],
      ruling: { decision: "PROCEED", reason: "r", consensus: 0.7 },
    } as unknown as DebateRecord;
    await storeDebate(memory, "run-1", record, true);
    await storeDebate(memory, "run-1", record, true);
    expect(memory.recall(NS.elo, "critic")).toMatchObject({
      rating: 1210,
      matches: 1,
      successes: 1,
    });
    expect((await ratingsBefore(memory, "run-1")).critic).toEqual(START_RATING);
    await storeDebate(memory, "run-2", record, false);
    expect(memory.recall(NS.elo, "solution")).toMatchObject({
      rating: 1190,
      matches: 2,
      successes: 1,
    });
  });

  it("finds similar past requests by their words", () => {
    expect(similarity("add a retry setting", "Add a retry setting")).toBeCloseTo(1);
    expect(similarity("add a retry setting", "install the helper")).toBe(0);
  });
});

describe("the arena-debate pipeline", () => {
  it("loads without a warning", async () => {
    const loaded = await loadPipelineFile(join(BUNDLED_MACHINES, "arena-debate.yaml"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    expect(loaded.warnings).toEqual([]);
  });

  it("halts at the identity check when the workspace does not match its locks: nothing else runs", async () => {
    const workspace = arenaWorkspace();
    const ran = await runArena(
      workspace,
      "--set",
      'workspace={"project":"other","database":"arena"}',
    );
    expect(ran.code).toBe(1);
    const summary = summaryOf(ran.stdout);
    expect(summary.status).toBe("failed");
    expect(summary.error.message).toContain(
      'identity mismatch: project "other" is not the locked "stagechart"',
    );
    expect(await transitionsOf(workspace, summary.runId)).toEqual(["verify-identity->fail"]);
    const store = SqliteStore.open(storeOf(workspace));
    if (!store.ok) throw store.error;
    const stages = store.value
      .auditOf(summary.runId)
      .flatMap((e) => (e.type === "StageSetup" ? [e.stageId] : []));
    expect(stages).toEqual(["verify-identity"]);
    store.value.close();
  });

  it("proceeds when the configured locks are the workspace's", async () => {
    const locks = '{"project":"acme","database":"orders"}';
    const ran = await runArena(
      arenaWorkspace(),
      "--set",
      `locks=${locks}`,
      "--set",
      `workspace=${locks}`,
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(summaryOf(ran.stdout).output.decision).toBe("PROCEED");
  });

  it("reads its thresholds from ctx: a lower consensus target spares the redebate script its second pass", async () => {
    const workspace = arenaWorkspace();
    const ran = await runArena(
      workspace,
      "--model",
      arenaScript("redebate"),
      "--set",
      "consensusTarget=0.7",
    );
    expect(ran.code, ran.stderr).toBe(0);
    const transitions = await transitionsOf(workspace, summaryOf(ran.stdout).runId);
    expect(transitions).toContain("multi-pass-check->aggregate");
    expect(transitions).not.toContain("multi-pass-check->solution");
  });

  it("keeps each agent's Elo rating in the store: a second run starts from the first's", async () => {
    const workspace = arenaWorkspace();
    const first = await runArena(workspace, "--model", arenaScript("redebate"));
    expect(first.code, first.stderr).toBe(0);
    const second = await runArena(workspace, "--model", arenaScript("redebate"));
    expect(second.code, second.stderr).toBe(0);

    const opened = SqliteStore.open(storeOf(workspace));
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    expect(store.recall(NS.elo, "critic")).toMatchObject({
      rating: 1220,
      matches: 2,
      successes: 2,
    });
    expect(store.recall(NS.elo, "solution")).toMatchObject({
      rating: 1190,
      matches: 2,
      successes: 2,
    });
    expect(store.recall(NS.elo, "security")).toMatchObject({ rating: 1200, matches: 2 });
    const secondTrace = store.recall(NS.traces, summaryOf(second.stdout).output.traceId) as {
      memory: { ratings: Record<string, { rating: number }>; recent: { traceId: string }[] };
    };
    // The second run weighed the votes with the ratings the first left, and remembers the first.
    expect(secondTrace.memory.ratings.critic?.rating).toBe(1210);
    expect(secondTrace.memory.ratings.solution?.rating).toBe(1195);
    expect(secondTrace.memory.recent.map((d) => d.traceId)).toEqual([
      summaryOf(first.stdout).output.traceId,
    ]);
    store.close();
  });
});

describe("the arena debate's sandboxed execution", () => {
  it("heals a failed task: the Critic's repaired task runs in its place and the plan succeeds", async () => {
    const workspace = arenaWorkspace();
    const script = arenaScriptVariant({
      plan: planTurn([
        { name: "write-a", run: "echo a > a.txt", rollback: "rm a.txt" },
        { name: "append-b", run: "cat b.txt >> a.txt" },
      ]),
      "self-heal": [
        {
          tool: "submit_diagnosis",
          args: {
            diagnosed: true,
            diagnosis: "b.txt does not exist yet",
            tasks: [{ name: "write-and-append-b", run: "echo b > b.txt && cat b.txt >> a.txt" }],
          },
        },
      ],
    });
    const ran = await runArena(workspace, "--model", script);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.output).toMatchObject({ decision: "PROCEED", execution: "succeeded" });
    expect(readFileSync(join(workspace, "a.txt"), "utf8")).toBe("a\nb\n");
    const transitions = await transitionsOf(workspace, summary.runId);
    expect(transitions.slice(transitions.indexOf("decide->sandbox") + 1)).toEqual([
      "run-tasks->validate",
      "validate->self-heal",
      "self-heal->run-tasks",
      "run-tasks->validate",
      "validate->done",
      "sandbox->store-memory",
      "store-memory->audit",
      "audit->done",
    ]);
  });

  it("rolls back what completed, newest first, when the Critic cannot diagnose the failure", async () => {
    const workspace = arenaWorkspace();
    const step = (n: number) => ({
      name: `step-${n}`,
      run: `echo done-${n} >> log.txt`,
      rollback: `echo undo-${n} >> log.txt`,
    });
    const script = arenaScriptVariant({
      plan: planTurn([step(1), step(2), step(3), { name: "broken", run: "exit 4" }]),
      "self-heal": [
        {
          tool: "submit_diagnosis",
          args: { diagnosed: false, diagnosis: "no idea why it exits 4" },
        },
      ],
    });
    const ran = await runArena(workspace, "--model", script);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.output).toMatchObject({ decision: "PROCEED", execution: "rolled-back" });
    expect(readFileSync(join(workspace, "log.txt"), "utf8").trim().split("\n")).toEqual([
      "done-1",
      "done-2",
      "done-3",
      "undo-3",
      "undo-2",
      "undo-1",
    ]);
    const transitions = await transitionsOf(workspace, summary.runId);
    expect(transitions).toContain("self-heal->rollback");
    expect(transitions).toContain("rollback->done");
    // A plan that did not run counts as no success for the agents that backed it.
    const opened = SqliteStore.open(storeOf(workspace));
    if (!opened.ok) throw opened.error;
    expect(opened.value.recall(NS.elo, "analyst")).toMatchObject({ matches: 1, successes: 0 });
    opened.value.close();
  });

  it("rolls back once the Critic's repairs keep failing, after 2 heals", async () => {
    const workspace = arenaWorkspace();
    const repair = {
      tool: "submit_diagnosis",
      args: {
        diagnosed: true,
        diagnosis: "try again",
        tasks: [{ name: "still-broken", run: "exit 1" }],
      },
    };
    const script = arenaScriptVariant({
      plan: planTurn([
        { name: "write-a", run: "echo a > a.txt", rollback: "rm a.txt" },
        { name: "broken", run: "exit 1" },
      ]),
      "self-heal": [repair, repair, repair],
    });
    const ran = await runArena(workspace, "--model", script);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.output.execution).toBe("rolled-back");
    const transitions = await transitionsOf(workspace, summary.runId);
    expect(transitions.filter((t) => t === "self-heal->run-tasks")).toHaveLength(2);
    expect(transitions).toContain("self-heal->rollback");
    expect(() => readFileSync(join(workspace, "a.txt"))).toThrow();
  });
});
