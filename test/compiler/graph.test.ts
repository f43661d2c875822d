import { describe, expect, it } from "vitest";
import { type JsonNode, renderGraph } from "../../src/compiler/graph.js";
import { compiledPipeline } from "../../src/compiler/pipeline-machine.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { code, pipelineOf } from "../support/pipelines.js";

/** `graph` as the command draws it: the machine runs are provided from, and its definition. */
const drawn = (pipeline: PipelineDefinition, format: "mermaid" | "dot" | "json") =>
  renderGraph(compiledPipeline(pipeline), format, pipeline);

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
  it("in Mermaid, draws a group as the one state it runs as, named with its siblings and policy", () => {
    const mermaid = drawn(reviewLoop(), "mermaid");
    expect(mermaid).toContain("  [*] --> s_demo_plan");
    expect(mermaid).toContain(
      '  state "execute_parallel ∥ test, lint (quorum 1)" as s_demo_execute_parallel\n',
    );
    expect(mermaid).not.toContain("state s_demo_execute_parallel {");
    expect(mermaid).not.toMatch(/^ {2}state "test" as s_demo_test$/m);
  });

  it("names a group's cap on the siblings running at once", () => {
    const pipeline = reviewLoop();
    const fanOut = pipeline.next.execute;
    if (fanOut?.kind === "parallel") fanOut.maxConcurrency = 1;
    expect(drawn(pipeline, "mermaid")).toContain(
      'state "execute_parallel ∥ test, lint (quorum 1, 1 at once)"',
    );
  });

  it("labels edges with the rules that take them, and leaves control events out", () => {
    const mermaid = drawn(reviewLoop(), "mermaid");
    expect(mermaid).toContain("s_demo_plan --> s_demo_execute : ok");
    expect(mermaid).toContain("s_demo_review --> s_demo_done : output.approved equals true");
    expect(mermaid).toContain("s_demo_review --> s_demo_execute : visits review lt 3");
    expect(mermaid).toContain("s_demo_execute_parallel --> s_demo_review : quorum 1 policy met");
    expect(mermaid).toContain("s_demo_execute_parallel --> s_demo_execute_parallel : settled");
    expect(mermaid).not.toContain("OVERRIDE");
  });

  it("in DOT, draws each state as a node", () => {
    const dot = drawn(reviewLoop(), "dot");
    expect(dot).toMatch(/^digraph "demo" \{/);
    expect(dot).toContain(
      '"demo.execute_parallel" [label="execute_parallel ∥ test, lint (quorum 1)"];',
    );
    expect(dot).toContain('"demo.execute" -> "demo.execute_parallel" [label="ok"];');
  });

  it("in JSON, is xstate/graph's directed graph", () => {
    const graph = JSON.parse(drawn(reviewLoop(), "json"));
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

  it("carries the eventless transitions: a group's edges to its join and to failed", () => {
    const edges = edgesOf(JSON.parse(drawn(failFast(), "json")));
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
  });

  it("draws a group's siblings settling as the one transition the group takes them by", () => {
    const graph = JSON.parse(drawn(failFast(), "json")) as JsonNode;
    const group = graph.children.find((c) => c.id === "demo.execute_parallel");
    expect(group?.children).toEqual([]);
    expect(group?.edges).toContainEqual({
      source: "demo.execute_parallel",
      target: "demo.execute_parallel",
      label: { text: "xstate.done.actor.*" },
      description: "settled",
    });
    expect(group?.group).toEqual({
      siblings: [{ stage: "test" }, { stage: "lint" }],
      join: "review",
      policy: "fail-fast",
      maxConcurrency: 2,
    });
  });

  it("draws no way to failed from an all-settled group, whose policy joins whatever its siblings end with", () => {
    const pipeline = reviewLoop();
    const fanOut = pipeline.next.execute;
    if (fanOut?.kind === "parallel") fanOut.policy = { kind: "all-settled" };
    const edges = edgesOf(JSON.parse(drawn(pipeline, "json")));
    const fromGroup = edges.filter(
      (e) => e.source === "demo.execute_parallel" && e.target !== "demo.execute_parallel",
    );
    expect(fromGroup.map((e) => [e.target, e.description])).toEqual([
      ["demo.review", "all-settled policy met"],
    ]);
  });

  it("keeps xstate/graph's evented edges, each with the rule it stands for", () => {
    const edges = edgesOf(JSON.parse(drawn(failFast(), "json")));
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
