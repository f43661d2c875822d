import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineContext } from "../../src/compiler/pipeline-context.js";
import { EMPTY_TABLE, recordOf } from "../../src/compiler/stage-table.js";
import { resumeRun, startRun } from "../../src/runtime/run.js";
import { openStore } from "../support/live-runs.js";
import { codeReviewScriptOf, llm, pipelineOf, waits } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** `plan` parks on a grant inside the group while `slow` settles. */
const group = pipelineOf({
  id: "group",
  stages: [waits("start", 1), llm("plan"), waits("slow", 20), waits("join", 1)],
  next: {
    start: {
      kind: "parallel",
      siblings: ["plan", "slow"],
      join: "join",
      policy: { kind: "all-settled" },
    },
  },
});

type Stored = { value: unknown; context: PipelineContext };

describe("a run stored inside a parallel group", () => {
  it("resumes from a snapshot stored while groups ran as a region per sibling", async () => {
    const file = join(tempDir(), "runs.db");
    const host = () => harness(codeReviewScriptOf("plan"), { unansweredGrants: "suspend" }).host;
    const started = await startRun(group, {
      host: host(),
      store: openStore(file),
      runId: "g1",
      task: "t",
    });
    if (!started.ok) throw started.error;
    const parked = await started.value.result;
    expect(parked.status).toBe("suspended");
    const store = openStore(file);
    const stored = store.getSnapshot("g1");
    if (!stored.ok) throw stored.error;
    const snapshot = stored.value.snapshot as Stored;
    expect(snapshot.value).toBe("start_parallel");
    // What the same moment looked like before: the group's value held a region per sibling,
    // and its context the siblings' states as one plain object.
    const states = recordOf(snapshot.context.groups.start ?? EMPTY_TABLE);
    expect(states).toEqual({ plan: "running", slow: "settled" });
    const regions = { start_parallel: states };
    store.commitStep("g1", {
      events: [],
      snapshot: {
        ...snapshot,
        value: regions,
        context: { ...snapshot.context, groups: { start: states } },
      },
      definitionHash: stored.value.definitionHash ?? undefined,
    });
    const proposalId = parked.waiting?.[0]?.kind === "grant" ? parked.waiting[0].proposalId : "";
    const resumed = await resumeRun(group, "g1", {
      host: host(),
      store,
      answers: [{ proposalId, decision: "deny" }],
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("done");
    expect(Object.keys(result.results)).toEqual(expect.arrayContaining(["plan", "slow", "join"]));
  });

  it("is refused as corrupt when a running sibling's actor is missing from it", async () => {
    const file = join(tempDir(), "runs.db");
    const host = () => harness(codeReviewScriptOf("plan"), { unansweredGrants: "suspend" }).host;
    const started = await startRun(group, {
      host: host(),
      store: openStore(file),
      runId: "g2",
      task: "t",
    });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("suspended");
    const store = openStore(file);
    const stored = store.getSnapshot("g2");
    if (!stored.ok) throw stored.error;
    const snapshot = stored.value.snapshot as Stored & { children: Record<string, unknown> };
    const { plan: _running, ...others } = snapshot.children;
    store.commitStep("g2", {
      events: [],
      snapshot: { ...snapshot, children: others },
      definitionHash: stored.value.definitionHash ?? undefined,
    });
    const resumed = await resumeRun(group, "g2", { host: host(), store });
    expect(resumed.ok).toBe(false);
    if (resumed.ok) return;
    expect(resumed.error.code).toBe("Session/SnapshotCorrupt");
    expect(resumed.error.message).toContain(
      "children.plan: the actor its state invokes is missing",
    );
  });
});
