import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NS } from "../../machines/arena-debate/memory.js";
import { SqliteStore } from "../../src/store/index.js";
import { arenaScript, arenaWorkspace, runArena, transitionsOf } from "../support/arena-debate.js";
import { storeOf, summaryOf } from "../support/cli.js";

const DEBATE = [
  "analyst->solution",
  "solution->critic",
  "critic->security",
  "security->optimizer",
  "optimizer->multi-pass-check",
];
const PREPARATION = [
  "verify-identity->load-context",
  "load-context->classify",
  "classify->plan",
  "plan->analyst",
];
const SANDBOX = ["run-tasks->validate", "validate->done"];

function openStore(workspace: string): SqliteStore {
  const opened = SqliteStore.open(storeOf(workspace));
  if (!opened.ok) throw opened.error;
  return opened.value;
}

describe("stagechart run arena-debate", () => {
  it("its script reaches consensus on the first pass and proceeds: the plan runs, the trace is written", async () => {
    const workspace = arenaWorkspace();
    const ran = await runArena(workspace);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.status).toBe("done");
    expect(summary.output).toMatchObject({
      decision: "PROCEED",
      consensus: 0.825,
      execution: "succeeded",
      traceId: expect.stringMatching(/^trace-/),
    });
    expect(await transitionsOf(workspace, summary.runId)).toEqual([
      ...PREPARATION,
      ...DEBATE,
      "multi-pass-check->aggregate",
      "aggregate->decide",
      "decide->sandbox",
      ...SANDBOX,
      "sandbox->store-memory",
      "store-memory->audit",
      "audit->done",
    ]);
    expect(readFileSync(join(workspace, "config/service.ini"), "utf8")).toBe("retries=3\n");
    const store = openStore(workspace);
    const trace = store.recall(NS.traces, summary.output.traceId) as Record<string, unknown>;
    expect(trace).toMatchObject({ runId: summary.runId, ruling: { decision: "PROCEED" } });
    store.close();
  });

  it("its redebate script goes back to Solution once, then proceeds with the revised plan", async () => {
    const workspace = arenaWorkspace();
    const ran = await runArena(workspace, "--model", arenaScript("redebate"));
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.output).toMatchObject({
      decision: "PROCEED",
      consensus: 1,
      execution: "succeeded",
    });
    expect(await transitionsOf(workspace, summary.runId)).toEqual([
      ...PREPARATION,
      ...DEBATE,
      "multi-pass-check->solution",
      ...DEBATE.slice(1),
      "multi-pass-check->aggregate",
      "aggregate->decide",
      "decide->sandbox",
      ...SANDBOX,
      "sandbox->store-memory",
      "store-memory->audit",
      "audit->done",
    ]);
    // The revised plan ran: its check task is not in the first plan.
    expect(readFileSync(join(workspace, "config/service.ini"), "utf8")).toBe("retries=3\n");
  });

  it("its veto script is rejected by Security: nothing runs, yet the memory is stored and the trace written", async () => {
    const workspace = arenaWorkspace();
    const ran = await runArena(workspace, "--model", arenaScript("veto"));
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.output).toMatchObject({ decision: "REJECT" });
    expect(summary.output.reason).toContain("security vetoed the plan with confidence 0.95");
    expect(summary.output.execution).toBeUndefined();
    expect(await transitionsOf(workspace, summary.runId)).toEqual([
      ...PREPARATION,
      ...DEBATE,
      "multi-pass-check->aggregate",
      "aggregate->decide",
      "decide->store-memory",
      "store-memory->audit",
      "audit->done",
    ]);
    const store = openStore(workspace);
    expect(store.recall(NS.debates, summary.output.traceId)).toMatchObject({ decision: "REJECT" });
    expect(store.recall(NS.elo, "security")).toMatchObject({
      rating: 1220,
      matches: 1,
      successes: 0,
    });
    expect(store.recall(NS.traces, summary.output.traceId)).toMatchObject({
      runId: summary.runId,
      ruling: { decision: "REJECT" },
    });
    store.close();
    expect(existsSync(join(workspace, "config"))).toBe(false);
  });
});
