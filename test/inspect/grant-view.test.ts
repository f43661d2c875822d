import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject } from "../support/cli.js";
import { releaseRoot, releaseSuspendedOnGrant } from "../support/pi-workflows.js";

describe("GET /api/v1/runs/<id>/grants/<proposalId>", () => {
  let server: InspectServer;
  let runId: string;
  let proposalId: string;
  const get = async (path: string) => {
    const reply = await fetch(`http://127.0.0.1:${server.port}${path}`);
    return {
      status: reply.status,
      body: (await reply.json()) as Record<string, unknown> & { error?: { code: string } },
    };
  };

  beforeAll(async () => {
    const project = demoProject();
    const store = join(project, "runs.db");
    const suspended = await releaseSuspendedOnGrant(releaseRoot(), project, store);
    runId = suspended.runId;
    proposalId = suspended.waiting[0]?.proposalId as string;
    server = await startInspectServer({ storePath: store, port: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("gives a waiting grant's call whole, as the stage's transcript holds it, and why it needs a grant", async () => {
    const { status, body } = await get(
      `/api/v1/runs/${runId}/grants/${encodeURIComponent(proposalId)}`,
    );
    expect(status).toBe(200);
    expect(body).toEqual({
      proposalId,
      stageId: "static-analysis",
      tool: "Bash",
      args: { command: "echo outside the whitelist" },
      reason: expect.stringMatching(/^Bash is not among static-analysis's tools \(.+\)$/),
    });
  });

  it("refuses a proposal the run does not wait on", async () => {
    const { status, body } = await get(`/api/v1/runs/${runId}/grants/${runId}%2Fnone`);
    expect(status).toBe(409);
    expect(body.error?.code).toBe("Session/NoPendingGrant");
  });
});
