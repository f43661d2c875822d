import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { DECIDING } from "../support/ask-pipelines.js";
import { runCli, summaryOf } from "../support/cli.js";
import { tempDir } from "../support/stages.js";

describe("a page's answer to a suspended run's ask stage", () => {
  let dir: string;
  let store: string;
  let server: InspectServer;
  const post = (runId: string, stageExecutionId: string, body: unknown) =>
    fetch(
      `http://127.0.0.1:${server.port}/api/v1/runs/${runId}/asks/${encodeURIComponent(stageExecutionId)}`,
      { method: "POST", body: JSON.stringify(body) },
    );
  const statusOf = async (runId: string) =>
    (
      (await (await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runId}`)).json()) as {
        status: string;
      }
    ).status;

  beforeAll(async () => {
    dir = tempDir();
    store = join(dir, "runs.db");
    writeFileSync(join(dir, "deciding.yaml"), DECIDING);
    writeFileSync(join(dir, "deciding.script.yaml"), "stages: {}\n");
    server = await startInspectServer({
      storePath: store,
      port: 0,
      resumeRuns: true,
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("is checked against the schema, then resumes the run with it", async () => {
    const ran = await runCli(
      ...["run", join(dir, "deciding.yaml"), "--root", dir, "--store", store],
      ...["--run-id", "ask-parked", "--headless", "--json"],
    );
    expect(summaryOf(ran.stdout).status).toBe("suspended");

    const refused = await post("ask-parked", "ask-parked/decide/1", {
      value: { decision: "maybe" },
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: expect.objectContaining({
        code: "Validation/InputInvalid",
        message: expect.stringContaining("must be equal to one of the allowed values"),
      }),
    });
    const nobody = await post("ask-parked", "ask-parked/other/1", { value: {} });
    expect(nobody.status).toBe(409);
    expect(await nobody.json()).toEqual({
      error: expect.objectContaining({ code: "Session/NoPendingInput" }),
    });
    expect(await statusOf("ask-parked")).toBe("suspended");

    const answered = await post("ask-parked", "ask-parked/decide/1", {
      value: { decision: "accepted" },
    });
    expect(await answered.json()).toEqual({ answered: "resumed" });
    await expect.poll(() => statusOf("ask-parked"), { timeout: 20000 }).toBe("done");
  });
});
