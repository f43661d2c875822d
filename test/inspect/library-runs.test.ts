import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { loadPipelineFile, type PipelineDefinition } from "../../src/definitions/index.js";
import { MemoryAuditLog } from "../../src/events/audit.js";
import { pipelineChart } from "../../src/inspect/chart.js";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { resolveModelSpec } from "../../src/models/index.js";
import { createHost } from "../../src/runtime/host.js";
import { compilePipeline, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { demoProject } from "../support/cli.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

async function bundled(name: string) {
  const pipeline = await loadPipelineFile(join(MACHINES_DIR, `${name}.yaml`));
  if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
  const model = await resolveModelSpec(`scripted:${join(MACHINES_DIR, `${name}.script.yaml`)}`);
  if (!model.ok) throw model.error;
  return { pipeline: pipeline.value, model: model.value };
}

/** A library user's host on the pipeline's scripted model, storing its runs in `project`'s store. */
function hostIn(project: string, model: Awaited<ReturnType<typeof bundled>>["model"]) {
  const store = SqliteStore.open(join(project, "runs.db"));
  if (!store.ok) throw store.error;
  return createHost({ model, audit: new MemoryAuditLog(), root: project, store: store.value });
}

type Graph = { pipeline: unknown; layouts: { right: { width?: number } } };

let server: InspectServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function graphOf(project: string, runId: string) {
  server = await startInspectServer({ storePath: join(project, "runs.db"), port: 0 });
  const reply = await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runId}/graph`);
  return { status: reply.status, body: (await reply.json()) as Graph };
}

const expectChartOf = (graph: { status: number; body: Graph }, pipeline: PipelineDefinition) => {
  expect(graph.status, JSON.stringify(graph.body)).toBe(200);
  expect(graph.body.pipeline).toEqual(pipelineChart(pipeline));
  expect(graph.body.layouts.right.width).toBeGreaterThan(0);
};

describe("inspect draws runs that have no pipeline file stored with them", () => {
  it("a run started with startRun, from the outline it stored as it started", async () => {
    const project = demoProject();
    const { pipeline, model } = await bundled("code-review-parallel");
    const run = await startRun(pipeline, { host: hostIn(project, model), task: "rename auth" });
    if (!run.ok) throw run.error;
    expect((await run.value.result).status).toBe("done");

    expectChartOf(await graphOf(project, run.value.runId), pipeline);
  });

  it("a run another XState app invoked (compilePipeline on a host with a store)", async () => {
    const project = demoProject();
    const { pipeline, model } = await bundled("code-review");
    const app = createActor(compilePipeline(pipeline, hostIn(project, model)), {
      input: { runId: "embedded-1", ctx: { task: "rename auth" } },
    });
    app.start();
    expect(await toPromise(app)).toMatchObject({ status: "done" });

    expectChartOf(await graphOf(project, "embedded-1"), pipeline);
  });
});
