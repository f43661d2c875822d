import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { CODE_REVIEW_REPLIES, demoProject } from "../support/code-review-replies.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { tempDir } from "../support/stages.js";

/** Recorded from a live code-review run against the test server; `vitest -u` re-records it. */
const CASSETTE = resolve(import.meta.dirname, "../fixtures/cassettes/code-review.json");

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1) as string);

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
  const audit = await runCli("audit", summary.runId, "--store", store, "--json");
  return { summary, audit: comparable(audit.stdout, summary.runId) };
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
    const proposalId = parked.summary.waiting[0].proposalId;
    const resumed = await runCli(
      "resume",
      parked.summary.runId,
      "--approve",
      proposalId,
      "--store",
      store,
      "--json",
    );
    expect(summaryOf(resumed.stdout).status).toBe("done");
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
    const replayProposal = replay.summary.waiting[0].proposalId;
    const done = await runCli(
      "resume",
      replay.summary.runId,
      "--approve",
      replayProposal,
      "--store",
      replayStore,
      "--json",
    );
    expect(summaryOf(done.stdout).status).toBe("done");
    const trail = async (runId: string, where: string) =>
      comparable((await runCli("audit", runId, "--store", where, "--json")).stdout, runId);
    expect(await trail(replay.summary.runId, replayStore)).toEqual(
      await trail(parked.summary.runId, store),
    );
  });
});
