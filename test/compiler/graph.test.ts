import { describe, expect, it } from "vitest";
import { drawablePipeline, type JsonNode, renderGraph } from "../../src/compiler/graph.js";
import { code, pipelineOf } from "../support/pipelines.js";

const ok = () => ({ verdict: "ok" as const });
const reviewLoop = () =>
  pipelineOf({
    id: "demo",
    stages: ["plan", "execute", "test", "lint", "review"].map((id) => code(id, ok)),
    next: {
      plan: "execute",
      execute: {
        kind: "parallel",
        siblings: ["test", "lint"],
        join: "review",
        policy: { kind: "quorum", k: 1 },
      },
      review: {
        kind: "rules",
        rules: [
          { when: { path: "output.approved", op: "equals", value: true }, to: "done" },
          { when: { visits: "review", op: "lt", value: 3 }, to: "execute" },
          { to: "fail" },
        ],
      },
    },
  });

describe("the graph of a compiled pipeline", () => {
  it("in Mermaid, nests each sibling as a region of the group's parallel state", () => {
    const mermaid = renderGraph(drawablePipeline(reviewLoop()), "mermaid");
    expect(mermaid).toContain("  [*] --> s_demo_plan");
    expect(mermaid).toMatch(
      / {2}state s_demo_execute_parallel \{\n {4}state "test" as s_demo_execute_parallel_test\n/,
    );
    expect(mermaid).toContain("\n    --\n");
    expect(mermaid).not.toMatch(/^ {2}state "test" as s_demo_test$/m);
  });

  it("labels edges with the rules that take them, and leaves control events out", () => {
    const mermaid = renderGraph(drawablePipeline(reviewLoop()), "mermaid");
    expect(mermaid).toContain("s_demo_plan --> s_demo_execute : ok");
    expect(mermaid).toContain("s_demo_review --> s_demo_done : output.approved equals true");
    expect(mermaid).toContain("s_demo_review --> s_demo_execute : visits review lt 3");
    expect(mermaid).toContain("s_demo_execute_parallel --> s_demo_review : quorum 1 policy met");
    expect(mermaid).not.toContain("OVERRIDE");
  });

  it("in DOT, draws composite states as clusters", () => {
    const dot = renderGraph(drawablePipeline(reviewLoop()), "dot");
    expect(dot).toMatch(/^digraph "demo" \{/);
    expect(dot).toContain('subgraph "cluster_demo.execute_parallel" {');
    expect(dot).toContain(
      '"demo.execute" -> "demo.execute_parallel" [lhead="cluster_demo.execute_parallel", label="ok"];',
    );
  });

  it("in JSON, is xstate/graph's directed graph", () => {
    const graph = JSON.parse(renderGraph(drawablePipeline(reviewLoop()), "json"));
    expect(graph.id).toBe("demo");
    expect(graph.children.map((c: { id: string }) => c.id)).toEqual([
      "demo.plan",
      "demo.execute",
      "demo.review",
      "demo.execute_parallel",
      "demo.done",
      "demo.failed",
      "demo.cancelled",
    ]);
  });
});

describe("the JSON graph", () => {
  const edgesOf = (node: JsonNode): JsonNode["edges"] => [
    ...node.edges,
    ...node.children.flatMap(edgesOf),
  ];
  const failFast = () => {
    const pipeline = reviewLoop();
    const fanOut = pipeline.next.execute;
    if (fanOut?.kind === "parallel") fanOut.policy = { kind: "fail-fast" };
    return pipeline;
  };

  it("carries the eventless transitions: a group's edges to its join and to failed, a sibling's start", () => {
    const edges = edgesOf(JSON.parse(renderGraph(drawablePipeline(failFast()), "json")));
    expect(edges).toContainEqual({
      source: "demo.execute_parallel",
      target: "demo.review",
      label: { text: "always" },
      description: "fail-fast policy met",
    });
    expect(edges).toContainEqual({
      source: "demo.execute_parallel",
      target: "demo.failed",
      label: { text: "always" },
      description: "fail-fast policy failed",
    });
    expect(edges).toContainEqual({
      source: "demo.execute_parallel.lint.queued",
      target: "demo.execute_parallel.lint.running",
      label: { text: "always" },
      description: "started",
    });
  });

  it("draws no way to failed from an all-settled group, whose policy joins whatever its siblings end with", () => {
    const pipeline = reviewLoop();
    const fanOut = pipeline.next.execute;
    if (fanOut?.kind === "parallel") fanOut.policy = { kind: "all-settled" };
    const edges = edgesOf(JSON.parse(renderGraph(drawablePipeline(pipeline), "json")));
    const fromGroup = edges.filter((e) => e.source === "demo.execute_parallel");
    expect(fromGroup.map((e) => [e.target, e.description])).toEqual([
      ["demo.review", "all-settled policy met"],
    ]);
  });

  it("keeps xstate/graph's evented edges, each with the rule it stands for", () => {
    const edges = edgesOf(JSON.parse(renderGraph(drawablePipeline(failFast()), "json")));
    const fromReview = edges.filter(
      (e) => e.source === "demo.review" && e.label.text === "xstate.done.actor.review",
    );
    expect(fromReview.map((e) => [e.target, e.description])).toEqual([
      ["demo.done", "output.approved equals true"],
      ["demo.execute", "visits review lt 3"],
      ["demo.failed", "otherwise"],
      ["demo.failed", "failed"],
    ]);
  });
});
