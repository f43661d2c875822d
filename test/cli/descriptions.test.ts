import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { JsonNode } from "../../src/compiler/graph.js";
import { demoProject, runCli, runPipelineIn, storeCommand, summaryOf } from "../support/cli.js";
import { STAGES_DIR } from "../support/stages.js";

/** A stage file's `description:` line, as written. */
const descriptionIn = (stage: string): string =>
  (/^description: (.*)$/m.exec(readFileSync(join(STAGES_DIR, `${stage}.md`), "utf8")) ?? [])[1] ??
  "";

const nodes = (node: JsonNode): JsonNode[] => [node, ...node.children.flatMap(nodes)];

describe("a stage's description", () => {
  it("is on its node in graph --format json, a parallel group's siblings' on its group, and on no other", async () => {
    const graph = await runCli("graph", "code-review-parallel", "--format", "json");
    const all = nodes(JSON.parse(graph.stdout));
    const described = Object.fromEntries(
      all.flatMap((n) => (n.description === undefined ? [] : [[n.id, n.description]])),
    );
    expect(described).toEqual({
      "code-review-parallel.execute": descriptionIn("execute"),
      "code-review-parallel.review": descriptionIn("review"),
    });
    const group = all.find((n) => n.id === "code-review-parallel.execute_parallel");
    expect(group?.group?.siblings).toEqual([
      { stage: "test", description: descriptionIn("test") },
      { stage: "lint", description: descriptionIn("lint") },
    ]);
  });

  it("is shown by show for each stage execution, in text and in --json", async () => {
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "rename", "--headless", "--json");
    const { runId } = summaryOf(run.stdout);
    const text = (await storeCommand(project, "show", runId)).stdout;
    expect(text).toContain(`  ${runId}/plan/1  ok\n`);
    expect(text).toContain(`  ${runId}/execute/1  ok — ${descriptionIn("execute")}\n`);
    expect(text).toContain(`  ${runId}/review/1  ok — ${descriptionIn("review")}\n`);
    const json = JSON.parse((await storeCommand(project, "show", runId, "--json")).stdout);
    expect(json.stages).toEqual([
      { stageId: "plan", stageExecutionId: `${runId}/plan/1`, verdict: "ok" },
      {
        stageId: "execute",
        stageExecutionId: `${runId}/execute/1`,
        verdict: "ok",
        description: descriptionIn("execute"),
      },
      {
        stageId: "review",
        stageExecutionId: `${runId}/review/1`,
        verdict: "ok",
        description: descriptionIn("review"),
      },
    ]);
  });
});
