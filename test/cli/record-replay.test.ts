import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoProject, runCli, summaryOf } from "../support/cli.js";
import { CODE_REVIEW_REPLIES } from "../support/code-review-replies.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { tempDir } from "../support/stages.js";

/** Recorded from a live code-review run against the test server; `vitest -u` re-records it. */
const CASSETTE = resolve(import.meta.dirname, "../fixtures/cassettes/code-review.json");

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Runs code-review headless in a fresh project; returns the run's summary and its audit trail. */
async function codeReview(store: string, model: string, ...extra: string[]) {
  const run = await runCli(
    "run",
    "code-review",
    "--task",
    "refactor auth module",
    "--model",
    model,
    "--headless",
    "--json",
    "--root",
    demoProject(),
    "--store",
    store,
    ...extra,
  );
  const summary = summaryOf(run.stdout);
  return { summary, audit: await trailOf(store, summary.runId) };
}

/** Resumes a run suspended on a grant request, approving it; the same shape as `codeReview`. */
async function approveWaiting(
  store: string,
  parked: { runId: string; waiting: { proposalId: string }[] },
) {
  const [{ proposalId }] = parked.waiting as [{ proposalId: string }];
  const resumed = await runCli(
    "resume",
    parked.runId,
    "--approve",
    proposalId,
    "--store",
    store,
    "--json",
  );
  return { summary: summaryOf(resumed.stdout), audit: await trailOf(store, parked.runId) };
}

async function trailOf(store: string, runId: string): Promise<unknown[]> {
  return comparable((await runCli("audit", runId, "--store", store, "--json")).stdout, runId);
}

/** An audit trail without what differs between any two runs: timestamps, durations, the run id. */
function comparable(auditJson: string, runId: string): unknown[] {
  return JSON.parse(auditJson.split(runId).join("<run>"), (key, value) =>
    key === "at" || key === "durationMs" ? undefined : value,
  );
}

describe("record and replay", () => {
  it("records every model exchange of a live run, and the checked-in cassette is that recording", async () => {
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    const recorded = join(tempDir(), "code-review.json");
    const live = await codeReview(
      join(tempDir(), "runs.db"),
      `openai-compatible:${server.origin}/v1#test-model`,
      "--record",
      recorded,
      "--run-id",
      "run-recorded",
    );
    expect(live.summary.status).toBe("done");

    const cassette = JSON.parse(readFileSync(recorded, "utf8"));
    expect(
      cassette.exchanges.map((e: Record<string, unknown>) => [
        e.stageId,
        e.attempt,
        e.turn,
        e.call,
      ]),
    ).toEqual([
      ["plan", 1, 1, 0],
      ["plan", 1, 2, 1],
      ["plan", 1, 3, 2],
      ["execute", 1, 1, 0],
      ["execute", 1, 2, 1],
      ["review", 1, 1, 0],
    ]);
    await expect(readFileSync(recorded, "utf8")).toMatchFileSnapshot(CASSETTE);
  });

  it("replays the cassette with no server, giving the live run's audit trail", async () => {
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    const live = await codeReview(
      join(tempDir(), "runs.db"),
      `openai-compatible:${server.origin}/v1#test-model`,
    );
    await server.close();
    server = undefined;

    const replayed = await codeReview(join(tempDir(), "runs.db"), `replay:${CASSETTE}`);

    expect(replayed.summary).toMatchObject({ status: "done", output: live.summary.output });
    expect(replayed.audit).toEqual(live.audit);
  });

  it("fails a replay whose request differs from the recording, naming the stage and turn", async () => {
    const store = join(tempDir(), "runs.db");
    const run = await runCli(
      "run",
      "code-review",
      "--task",
      "a different task",
      "--model",
      `replay:${CASSETTE}`,
      "--headless",
      "--json",
      "--root",
      demoProject(),
      "--store",
      store,
    );
    expect(run.code).toBe(1);
    const { error } = summaryOf(run.stdout);
    expect(error).toMatchObject({
      code: "Validation/ReplayMismatch",
      context: { stageId: "plan" },
    });
    expect(error.message).toContain(
      "replay: stage plan (plan/1) attempt 1 turn 1: the request (prompt and tools) differs from the recorded one",
    );
  });

  it("keeps recording across a suspend and a resume, and the cassette replays the run the same way", async () => {
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    const cassette = join(tempDir(), "suspended.json");
    const store = join(tempDir(), "runs.db");
    const parked = await codeReview(
      store,
      `openai-compatible:${server.origin}/v1#test-model`,
      "--record",
      cassette,
      "--on-grant",
      "suspend",
    );
    expect(parked.summary.status).toBe("suspended");
    const resumed = await approveWaiting(store, parked.summary);
    expect(resumed.summary.status).toBe("done");
    await server.close();
    server = undefined;
    const recorded = JSON.parse(readFileSync(cassette, "utf8")).exchanges;
    expect(recorded.map((e: { stageId: string }) => e.stageId)).toEqual([
      "plan",
      "plan",
      "plan",
      "execute",
      "execute",
      "review",
    ]);

    const replayStore = join(tempDir(), "runs.db");
    const replay = await codeReview(replayStore, `replay:${cassette}`, "--on-grant", "suspend");
    const replayed = await approveWaiting(replayStore, replay.summary);
    expect(replayed.summary.status).toBe("done");
    expect(replayed.audit).toEqual(resumed.audit);
  });
});
