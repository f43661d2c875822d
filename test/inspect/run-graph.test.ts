import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { bundleDefinition } from "../../src/bundles/index.js";
import { loadWorkflowPipeline } from "../../src/definitions/pi-workflows/index.js";
import type { ChartNode } from "../../src/inspect/chart.js";
import { runGraphOf } from "../../src/inspect/run-graph.js";

import type { DefinitionBundle } from "../../src/runtime/run-records.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { releaseRoot } from "../support/pi-workflows.js";

const TWO_STAGES = `id: p
entry: prepare
stages:
  prepare: { code: ./code/steps.js#prepare }
  finish: { code: ./code/steps.js#finish }
next:
  prepare: [{ to: finish }]
`;

/** A module that leaves `marker` behind the moment it is imported. */
const stepsLeaving = (marker: string) => `import { writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(marker)}, "imported");
export const prepare = () => ({ verdict: "ok" });
export const finish = () => ({ verdict: "ok" });
`;

function write(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

/** A store holding one run of the definition `bundle` (stored under a hash of its own; or none). */
async function runOf(bundle: DefinitionBundle | undefined, pipelineFile: string) {
  const dir = mkdtempSync(join(tmpdir(), "run-graph-"));
  const opened = SqliteStore.open(join(dir, "runs.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const hash = `h${Math.random().toString(36).slice(2)}`;
  if (bundle) await store.saveDefinition(hash, bundle);
  const run = await store.createRun({
    runId: "run-1",
    pipelineId: "p",
    definitionHash: hash,
    options: { pipelineFile },
  });
  if (!run.ok) throw run.error;
  return { store, run: run.value };
}

const stagesOf = (root: ChartNode): string[] =>
  root.children.flatMap((child) => (child.stage ? [child.stage] : []));

describe("a run's chart in inspect", () => {
  let scratch: string;
  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), "run-graph-scratch-"));
    vi.stubEnv("XDG_CACHE_HOME", join(scratch, "cache"));
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("is drawn from the stored definition without importing its code modules", async () => {
    const marker = join(scratch, "imported");
    const bundle = {
      entry: "machines/p.yaml",
      files: { "machines/p.yaml": TWO_STAGES, "machines/code/steps.js": stepsLeaving(marker) },
    };
    const { store, run } = await runOf(bundle, join(scratch, "elsewhere/machines/p.yaml"));

    const graph = await runGraphOf(store, run);
    if (!graph.ok) throw graph.error;
    expect(stagesOf(graph.value.pipeline.root)).toEqual(["prepare", "finish"]);
    expect(existsSync(marker)).toBe(false);
  });

  it("does not import the code modules of the run's local pipeline file either", async () => {
    const marker = join(scratch, "imported");
    const project = join(scratch, "project");
    write(project, {
      "machines/p.yaml": TWO_STAGES,
      "machines/code/steps.js": stepsLeaving(marker),
    });
    const { store, run } = await runOf(undefined, join(project, "machines/p.yaml"));

    const graph = await runGraphOf(store, run);
    if (!graph.ok) throw graph.error;
    expect(stagesOf(graph.value.pipeline.root)).toEqual(["prepare", "finish"]);
    expect(existsSync(marker)).toBe(false);
  });

  it("stays the chart of the definition the run started with when its local file changed since", async () => {
    const project = join(scratch, "project");
    const steps = `export const prepare = () => ({ verdict: "ok" });\nexport const finish = prepare;\n`;
    const files = { "machines/p.yaml": TWO_STAGES, "machines/code/steps.js": steps };
    write(project, files);
    const { store, run } = await runOf(
      { entry: "machines/p.yaml", files },
      join(project, "machines/p.yaml"),
    );
    write(project, {
      "machines/p.yaml": TWO_STAGES.replace(
        "  finish:",
        "  added: { code: ./code/steps.js#prepare }\n  finish:",
      ),
    });

    const graph = await runGraphOf(store, run);
    if (!graph.ok) throw graph.error;
    expect(stagesOf(graph.value.pipeline.root)).toEqual(["prepare", "finish"]);
  });

  it("of a pi-workflows run that stored no outline is drawn from its workflow directory, subworkflows nested", async () => {
    const release = join(releaseRoot(), "release");
    const { store, run } = await runOf(undefined, release);

    const graph = await runGraphOf(store, run);
    if (!graph.ok) throw graph.error;
    const { root } = graph.value.pipeline;
    expect(stagesOf(root)).toEqual(["build", "code-review", "publish"]);
    const review = root.children.find((child) => child.stage === "code-review");
    expect(review?.sub && stagesOf(review.sub.root)).toEqual(["static-analysis", "manual-review"]);
  });

  it("of a queued pi-workflows run is drawn from the workflow directory stored with it", async () => {
    const release = join(releaseRoot(), "release");
    const loaded = await loadWorkflowPipeline(release);
    if (!loaded.ok) throw new Error(loaded.diagnostics.map((d) => d.message).join("; "));
    const bundled = await bundleDefinition(loaded.value);
    if (!bundled.ok) throw bundled.error;
    const { store, run } = await runOf(bundled.value.bundle, join(scratch, "gone/release"));

    const graph = await runGraphOf(store, run);
    if (!graph.ok) throw graph.error;
    expect(stagesOf(graph.value.pipeline.root)).toEqual(["build", "code-review", "publish"]);
  });
});
