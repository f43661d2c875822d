import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunDiff } from "../../src/inspect/run-diff.js";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";

describe("GET /api/v1/compare/<a>/<b>: two stored runs side by side", () => {
  let server: InspectServer;
  const runs: Record<string, string> = {};
  const get = async (path: string) => {
    const reply = await fetch(`http://127.0.0.1:${server.port}${path}`);
    return {
      status: reply.status,
      body: (await reply.json()) as RunDiff & { error: { code: string; message: string } },
    };
  };
  beforeAll(async () => {
    const project = demoProject();
    for (const [name, pipeline] of [
      ["first", "code-review-parallel"],
      ["second", "code-review-parallel"],
      ["other", "code-review"],
    ]) {
      const done = await runCli(
        ...["run", pipeline as string, "--task", "rename auth to authentication"],
        ...["--root", project, "--store", storeOf(project), "--headless", "--json"],
      );
      runs[name as string] = summaryOf(done.stdout).runId;
    }
    server = await startInspectServer({ storePath: storeOf(project), port: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("compares two runs of one pipeline", async () => {
    const { status, body } = await get(`/api/v1/compare/${runs.first}/${runs.second}`);

    expect(status).toBe(200);
    expect(body).toMatchObject({
      pipelineId: "code-review-parallel",
      a: { runId: runs.first, status: "done" },
      b: { runId: runs.second, status: "done" },
      sameDefinition: true,
    });
    expect(body.divergence).toBeUndefined();
    expect(body.stages.map((s) => s.stage)).toEqual(["plan", "execute", "test", "lint", "review"]);
  });

  it("refuses runs of two pipelines, and a run that is not there", async () => {
    const other = await get(`/api/v1/compare/${runs.first}/${runs.other}`);
    expect(other.status).toBe(400);
    expect(other.body.error).toMatchObject({
      code: "Validation/ComparePipelinesDiffer",
      message: expect.stringContaining("only runs of the same pipeline compare"),
    });
    const missing = await get(`/api/v1/compare/${runs.first}/no-such-run`);
    expect([missing.status, missing.body.error.code]).toEqual([404, "Session/RunNotFound"]);
  });
});
