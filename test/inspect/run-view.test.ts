import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { type ChartNode, pipelineChart } from "../../src/inspect/chart.js";
import { describeStoredRun } from "../../src/inspect/run-view.js";
import { startRun } from "../../src/runtime/run.js";
import { openStore } from "../support/live-runs.js";
import { loaded, MACHINES_DIR } from "../support/pipeline-files.js";
import { code, codeReviewScriptOf, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

describe("a stored run's view", () => {
  it("gives each stage execution its stage's description, a sub-pipeline's stages included", async () => {
    const described = (text: string) =>
      text.replace("turnCap: 20", "turnCap: 20\ndescription: Plans inside the work");
    const inner = pipelineOf({
      id: "inner",
      stages: [llm("plan", described)],
    });
    const outer = pipelineOf({
      id: "outer",
      stages: [
        code("prepare", () => ({ verdict: "ok" })),
        { kind: "pipeline", id: "work", pipeline: inner },
      ],
      next: { prepare: "work" },
    });
    const store = openStore();
    const started = await startRun(outer, {
      host: harness(codeReviewScriptOf("plan")).host,
      store,
      runId: "v1",
      task: "t",
    });
    if (!started.ok) throw started.error;
    const ended = await started.value.result;
    expect(ended.status, JSON.stringify(ended.error)).toBe("done");
    const view = await describeStoredRun(store, "v1");
    if (!view.ok) throw view.error;
    expect(
      view.value.stages.map(({ stageExecutionId, description }) => ({
        stageExecutionId,
        description,
      })),
    ).toEqual([
      { stageExecutionId: "v1/prepare/1", description: undefined },
      { stageExecutionId: "v1/work/1/plan/1", description: "Plans inside the work" },
    ]);
  });
});

describe("the chart the visualizer draws", () => {
  it("carries each stage's description on its node, sub-pipelines' stages included", async () => {
    const chart = pipelineChart(
      loaded(await loadPipelineFile(join(MACHINES_DIR, "arena-debate.yaml"))),
    );
    const described = new Map<string, string | undefined>();
    const walk = (node: ChartNode): void => {
      if (node.stage) described.set(node.stage, node.description);
      node.children.forEach(walk);
      if (node.sub) walk(node.sub.root);
    };
    walk(chart.root);
    expect(described.get("critic")).toBe("Round 3: find what is wrong with the plan.");
    expect(described.get("sandbox")).toMatch(/sandboxed execution/);
    expect(described.get("self-heal")).toMatch(/^The Critic diagnoses a failed task/);
    expect(described.get("aggregate")).toBeUndefined();
  });
});
