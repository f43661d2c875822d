import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { type Chart, pipelineChart } from "../../src/inspect/chart.js";
import { drawnEdges, laneLabel, shortLabel, stateLabel } from "../../src/inspect/chart-metrics.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";
import { code, pipelineOf } from "../support/pipelines.js";

async function chartOf(file: string): Promise<Chart> {
  const loaded = await loadPipelineFile(join(MACHINES_DIR, file), { importCode: false });
  if (!loaded.ok) throw new Error(loaded.diagnostics.map((d) => d.message).join("; "));
  return pipelineChart(loaded.value);
}

describe("a pipeline's chart", () => {
  it("keeps a stage's own rule into failed as an edge, and its failing or crashing apart", async () => {
    const chart = await chartOf("code-review.yaml");
    const intoFailed = chart.edges.filter(
      (e) => e.source === "code-review.review" && e.target === "code-review.failed",
    );
    expect(intoFailed).toEqual([
      { source: "code-review.review", target: "code-review.failed", label: "otherwise" },
      {
        source: "code-review.review",
        target: "code-review.failed",
        label: "failed / crashed",
        role: "failure",
      },
    ]);
    expect(drawnEdges(chart).filter((e) => e.target === "code-review.failed")).toEqual([
      expect.objectContaining({ source: "code-review.review", label: "otherwise" }),
    ]);
  });

  it("names a group by its siblings, says what each stage is, and draws no line for the group's settling", async () => {
    const chart = await chartOf("code-review-parallel.yaml");
    const group = chart.root.children.find((n) => n.group);
    expect(group?.group).toEqual({ name: "test ∥ lint", policy: "fail-fast", maxConcurrency: 2 });
    expect(group?.children.map((c) => [c.key, c.kind])).toEqual([
      ["test", "llm"],
      ["lint", "llm"],
    ]);
    const settling = chart.edges.filter((e) => e.source === group?.id && e.target === group?.id);
    expect(settling).toEqual([expect.objectContaining({ role: "internal" })]);
    expect(drawnEdges(chart).filter((e) => e.source === e.target)).toEqual([]);
    const kinds = await chartOf("arena-debate.yaml");
    expect(
      Object.fromEntries(kinds.root.children.filter((n) => n.stage).map((n) => [n.key, n.kind])),
    ).toMatchObject({ "verify-identity": "code", classify: "llm", sandbox: "pipeline" });
  });
});

describe("a map group's chart", () => {
  it("is one lane for its stage, named by its list, drawn × each until a run counts its items", () => {
    const pipeline = pipelineOf({
      id: "mapped",
      stages: [
        code("list", () => ({ verdict: "ok" })),
        code("review", () => ({ verdict: "ok" })),
        code("join", () => ({ verdict: "ok" })),
      ],
      next: {
        list: {
          kind: "map",
          over: "output.files",
          stage: "review",
          join: "join",
          policy: { kind: "quorum", k: 2 },
          maxConcurrency: 4,
        },
      },
    });
    const chart = pipelineChart(pipeline);
    const group = chart.root.children.find((n) => n.group);
    expect(group?.group).toEqual({
      name: "review × each of output.files",
      policy: "quorum 2",
      maxConcurrency: 4,
      map: { over: "output.files", maxItems: 1000 },
    });
    expect(group && stateLabel(group)).toBe("review × each of output.files · quorum 2, 4 at once");
    expect(group?.children.map((c) => [c.key, c.kind, c.lane])).toEqual([["review", "code", true]]);
    const lane = group?.children[0];
    expect(lane && stateLabel(lane)).toBe("review × each");
    expect(laneLabel("review", 6)).toBe("review ×6");
    // The stage has no state of its own: it runs only in the group.
    expect(chart.root.children.filter((n) => n.key === "review")).toEqual([]);
  });
});

describe("a guard on its edge", () => {
  it.each([
    ['output.next equals "codegen" and visits codegen lt 5', 'next = "codegen" and…'],
    ["output.approved equals true", "approved = true"],
    ["visits review lt 3", "visits review lt 3"],
    ["ok", ""],
  ])("%s is drawn as %s", (guard, drawn) => {
    expect(shortLabel(guard)).toBe(drawn);
  });
});
