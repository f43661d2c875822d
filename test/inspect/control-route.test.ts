import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { liveRun, openStore } from "../support/live-runs.js";
import { tempDir } from "../support/stages.js";

describe("POST /api/v1/runs/<runId>/cancel|override|redo: control of a stored run", () => {
  let server: InspectServer | undefined;
  afterEach(async () => {
    await server?.close();
  });
  const post = (
    runId: string,
    { type, ...body }: { type: string; [field: string]: unknown },
    headers: Record<string, string> = {},
  ) =>
    fetch(`http://127.0.0.1:${server?.port}/api/v1/runs/${runId}/${type.toLowerCase()}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });

  it("cancels a live run through its owner, audited as asked by the client the request names", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r1");
    server = await startInspectServer({ storePath: file, port: 0 });
    const reply = await post("r1", { type: "CANCEL" }, { "x-stagechart-client": "visualizer" });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toMatchObject({
      runId: "r1",
      control: "CANCEL",
      outcome: "applied",
    });
    expect((await owner.result).status).toBe("cancelled");
    const audit = openStore(file).auditOf("r1");
    expect(audit.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      control: { type: "CANCEL", reason: "cancelled by visualizer" },
      requestedBy: { by: "visualizer" },
    });
  });

  it("overrides a live run to a stage its transitions reach; one they do not is refused with the owner's reason", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r2");
    server = await startInspectServer({ storePath: file, port: 0 });
    const refused = await post("r2", { type: "OVERRIDE", to: "nowhere", reason: "r" });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: expect.objectContaining({ code: "Session/IllegalTransition" }),
    });
    const moved = await post("r2", { type: "OVERRIDE", to: "publish", reason: "draft is fine" });
    expect(moved.status).toBe(200);
    expect(Object.keys((await owner.result).results)).toEqual(["publish"]);
  });

  it("refuses a malformed control, and one for a run no process owns", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r3");
    owner.stop();
    await owner.result;
    server = await startInspectServer({ storePath: file, port: 0 });
    const bad = await post("r3", { type: "OVERRIDE", to: "publish" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: expect.objectContaining({ code: "Validation/RequestBodyInvalid" }),
    });
    const idle = await post("r3", { type: "CANCEL" }, { "x-stagechart-client": "not a name!" });
    expect(idle.status).toBe(409);
    expect(await idle.json()).toEqual({
      error: expect.objectContaining({ code: "Session/RunNotLive" }),
    });
  });

  it("cancels a queued run where it is stored, as stagechart cancel does: nothing of it runs", async () => {
    const file = join(tempDir(), "runs.db");
    const store = openStore(file);
    const queued = store.enqueueRun({
      runId: "q1",
      pipelineId: "slow",
      definitionHash: "h",
      options: {},
    });
    if (!queued.ok) throw queued.error;
    server = await startInspectServer({ storePath: file, port: 0 });
    const reply = await post("q1", { type: "CANCEL" });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toEqual({ runId: "q1", control: "CANCEL", outcome: "cancelled" });
    expect(store.getRun("q1")).toMatchObject({ ok: true, value: { status: "cancelled" } });
    expect(store.auditOf("q1").map((e) => e.type)).toEqual(["RunCancelled"]);
  });

  it("audits a caller that names no client (or names one badly) as the api", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r4");
    server = await startInspectServer({ storePath: file, port: 0 });
    const reply = await post("r4", { type: "CANCEL" }, { "x-stagechart-client": "no spaces" });
    expect(reply.status).toBe(200);
    await owner.result;
    const audit = openStore(file).auditOf("r4");
    expect(audit.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      control: { type: "CANCEL", reason: "cancelled by api" },
      requestedBy: { by: "api" },
    });
  });
});
