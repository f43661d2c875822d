import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { NS } from "../../machines/arena-debate/memory.js";
import { SqliteStore } from "../../src/store/index.js";
import { ARENA_TASK, arenaScriptVariant, arenaWorkspace } from "../support/arena-debate.js";
import { REPO_ROOT, storeOf } from "../support/cli.js";
import { type Life, live } from "../support/crash-runs.js";

// Kill points: after the n-th progress line of a life, wait this long. They fall in the debate,
// the code stages, the sandbox's tasks and the tail as the run moves on.
const KILLS = [
  [6, 40],
  [4, 120],
  [5, 0],
  [7, 200],
  [3, 60],
  [6, 150],
] as const;

/** The main script with every model turn slow, and tasks that take a while: room to be killed in. */
function slowScript(): string {
  const main = parse(readFileSync(join(REPO_ROOT, "machines/arena-debate.script.yaml"), "utf8"));
  const stages = main.stages as Record<string, Record<string, unknown>[]>;
  const slow = Object.fromEntries(
    Object.entries(stages).map(([id, turns]) => [
      id,
      turns.map((turn) => ({ ...turn, delayMs: 120 })),
    ]),
  );
  return arenaScriptVariant({
    ...slow,
    plan: [
      {
        tool: "submit_plan",
        delayMs: 120,
        args: {
          summary: "write the setting slowly, then check it",
          tasks: [
            {
              name: "write-config",
              run: "sleep 0.3 && mkdir -p config && printf 'retries=3\\n' > config/service.ini",
              rollback: "rm -f config/service.ini",
            },
            { name: "check-config", run: "sleep 0.3 && grep -qx 'retries=3' config/service.ini" },
          ],
        },
      },
    ],
  });
}

describe("an arena-debate run killed with SIGKILL at several points", () => {
  it("resumes to the same decision: every stage execution exits once, the memory stored once", async () => {
    const workspace = arenaWorkspace();
    const store = storeOf(workspace);
    const start = [
      ...["run", "arena-debate", "--task", ARENA_TASK, "--root", workspace, "--store", store],
      ...["--run-id", "arena-1", "--mode", "yolo", "--headless", "--json", "--model", slowScript()],
    ];
    const resume = ["resume", "arena-1", "--store", store, "--headless", "--json"];
    const statusOf = () => {
      const opened = SqliteStore.open(store);
      if (!opened.ok) throw opened.error;
      const run = opened.value.getRun("arena-1");
      opened.value.close();
      return run.ok ? run.value : undefined;
    };
    let kills = 0;
    let last: Life = await live({ cli: start }, { afterEvents: 8, delayMs: 50 });
    // A kill may land after the run ended: the store, not the last life, says when it is over.
    while (statusOf()?.status !== "done") {
      expect(last.code, JSON.stringify(last.result)).toBeNull();
      kills += 1;
      const kill = KILLS[kills - 1];
      last = await live(
        { cli: resume },
        kill ? { afterEvents: kill[0], delayMs: kill[1] } : undefined,
      );
    }
    expect(kills).toBeGreaterThanOrEqual(3);
    expect(statusOf()?.output).toMatchObject({
      decision: "PROCEED",
      execution: "succeeded",
      consensus: 0.825,
    });

    const opened = SqliteStore.open(store);
    if (!opened.ok) throw opened.error;
    const events = opened.value.auditOf("arena-1");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const exits = new Map<string, number>();
    for (const e of events)
      if (e.type === "StageExited" && e.stageExecutionId)
        exits.set(e.stageExecutionId, (exits.get(e.stageExecutionId) ?? 0) + 1);
    // No stage exits twice, code stages included: a model stage's recorded replies are reused, and
    // every stage's StageExited is committed with the transition after it, so a stage that exited
    // is never run again.
    expect([...exits].filter(([, count]) => count !== 1)).toEqual([]);
    const stages = [
      ...["verify-identity", "load-context", "classify", "plan", "analyst", "solution", "critic"],
      ...[
        "security",
        "optimizer",
        "multi-pass-check",
        "aggregate",
        "decide",
        "store-memory",
        "audit",
      ],
    ];
    expect([...exits.keys()].sort()).toEqual(
      [
        ...stages.map((id) => `arena-1/${id}/1`),
        ...["run-tasks", "validate"].map((id) => `arena-1/sandbox/1/${id}/1`),
      ].sort(),
    );
    expect(opened.value.recall(NS.elo, "analyst")).toMatchObject({ matches: 1, successes: 1 });
    expect(opened.value.recent(NS.debates, 5)).toHaveLength(1);
    opened.value.close();
    expect(readFileSync(join(workspace, "config/service.ini"), "utf8")).toBe("retries=3\n");
  }, 120_000);
});
