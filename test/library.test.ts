import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  resolveModelSpec,
  SqliteStore,
  startRun,
} from "../src/index.js";
import { demoProject } from "./support/cli.js";

const ROOT = resolve(import.meta.dirname, "..");

describe("the package entry", () => {
  it("runs the README's library example: a stored run of the bundled pipeline, events and result", async () => {
    const project = demoProject();
    const model = await resolveModelSpec(
      `scripted:${join(ROOT, "machines/code-review.script.yaml")}`,
    );
    if (!model.ok) throw model.error;
    const pipeline = await loadPipelineFile(join(ROOT, "machines/code-review.yaml"));
    if (!pipeline.ok) throw new Error(pipeline.diagnostics.map((d) => d.message).join("\n"));
    const host = createHost({ model: model.value, audit: new MemoryAuditLog(), root: project });
    const store = SqliteStore.open(join(project, ".stagechart/runs.db"));
    if (!store.ok) throw store.error;
    const run = startRun(pipeline.value, {
      host,
      store: store.value,
      task: "refactor auth module",
    });
    if (!run.ok) throw run.error;
    const seqs: number[] = [];
    for await (const event of run.value.events()) seqs.push(event.seq);
    const { status, runId } = await run.value.result;
    expect(status).toBe("done");
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(store.value.getRun(runId)).toMatchObject({ ok: true, value: { status: "done" } });
    store.value.close();
  });
});

describe("the package's xstate", () => {
  it("is a peer dependency, so an app and stagechart share one copy (and the repo keeps it for itself)", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(manifest.dependencies.xstate).toBeUndefined();
    expect(manifest.peerDependencies.xstate).toMatch(/^\^5\./);
    expect(manifest.devDependencies.xstate).toBe(manifest.peerDependencies.xstate);
  });
});
