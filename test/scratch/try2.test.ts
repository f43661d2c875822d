import { it } from "vitest";
import { pipelinePaths } from "../../src/testing/paths.js";
import { testPipeline } from "../../src/testing/test-pipeline.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";
import type { JoinPolicy } from "../../src/definitions/pipeline-types.js";
const spell = (steps: { stage: string; outcome: string }[]) => steps.map((s) => `${s.stage}:${s.outcome}`).join(" > ");
const mapOf = (policy: JoinPolicy, extra: Record<string, unknown> = {}) => pipelineOf({
  stages: [
    code("list", () => ({ verdict: "ok", output: { files: ["x"] } })),
    llm("test"),
    llm("review"),
  ],
  next: { list: { kind: "map", over: "output.files", stage: "test", join: "review", policy, ...extra } as never },
});
it("try", async () => {
  for (const [policy, extra] of [[{ kind: "quorum", k: 2 }, { maxItems: 3 }], [{ kind: "fail-fast" }, {}], [{ kind: "any" }, {maxConcurrency: 1}]] as const) {
    const p = mapOf(policy as JoinPolicy, extra);
    const list = pipelinePaths(p, { strategy: "simple" });
    console.log(JSON.stringify(policy), list.paths.length, "\n" + list.paths.filter(x=>x.end!=="suspended").map(x => `${spell(x.steps)} => ${x.end}`).join("\n"));
    const report = await testPipeline(p, {});
    console.log(report.passed, report.failed, JSON.stringify(report.paths.filter(x=>!x.ok)), JSON.stringify(report.coverage.transitions.uncovered));
  }
}, 120000);
