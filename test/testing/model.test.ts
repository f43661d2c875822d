import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AnyStateMachine, AnyStateNode, InspectionEvent } from "xstate";
import { getShortestPaths } from "xstate/graph";
import type { JsonNode } from "../../src/compiler/graph.js";
import { renderGraph } from "../../src/compiler/graph.js";
import { compiledPipeline } from "../../src/compiler/pipeline-machine.js";
import { entriesOf } from "../../src/compiler/stage-table.js";
import { loadWorkflowPipeline } from "../../src/definitions/pi-workflows/index.js";
import type { PipelineDefinition, PipelineStage } from "../../src/definitions/pipeline-types.js";
import { loadPipelineFile } from "../../src/index.js";
import { type Chart, type ChartNode, pipelineChart } from "../../src/inspect/chart.js";
import { startRun } from "../../src/runtime/run.js";
import {
  activeStages,
  modelMachine,
  pipelinePaths,
  resultFor,
  stageDone,
  stageOutcomes,
} from "../../src/testing/index.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

const ok = () => ({ verdict: "ok" as const });

/**
 * Every shape a pipeline's machine takes: groups under each policy (two of them capped by
 * `maxConcurrency`), LLM, code, command, ask and sub-pipeline stages, siblings among them.
 */
function everyShape(): PipelineDefinition {
  const inner = pipelineOf({
    id: "inner",
    stages: [code("inner-a", ok), code("inner-b", ok)],
    next: {
      "inner-a": {
        kind: "rules",
        rules: [
          { when: { path: "output.again", op: "equals", value: true }, to: "inner-a" },
          { to: "inner-b" },
        ],
      },
    },
  });
  const command = (id: string): PipelineStage => ({
    kind: "command",
    id,
    command: "true",
    timeoutMs: 1000,
  });
  const sub = (id: string): PipelineStage => ({ kind: "pipeline", id, pipeline: inner });
  const ask: PipelineStage = {
    kind: "ask",
    id: "decide",
    prompt: "Go on?",
    schema: {
      type: "object",
      required: ["decision"],
      properties: { decision: { enum: ["yes", "no"] } },
    },
  };
  return pipelineOf({
    id: "every-shape",
    stages: [
      llm("plan"),
      code("a", ok),
      command("b"),
      sub("c"),
      code("gather", ok),
      llm("lint"),
      code("e", ok),
      code("vote", ok),
      code("f", ok),
      code("g", ok),
      code("tally", ok),
      code("i", ok),
      code("j", ok),
      code("k", ok),
      ask,
      sub("nested"),
      command("check"),
    ],
    next: {
      plan: parallel(["a", "b", "c"], "gather", { kind: "fail-fast" }, 2),
      gather: parallel(["lint", "e"], "vote", { kind: "all-settled" }),
      vote: parallel(["f", "g"], "tally", { kind: "any" }),
      tally: parallel(["i", "j", "k"], "decide", { kind: "quorum", k: 2 }, 1),
      decide: {
        kind: "rules",
        rules: [
          { when: { path: "output.decision", op: "equals", value: "yes" }, to: "nested" },
          { to: "check" },
        ],
      },
    },
  });
}

function parallel(
  siblings: string[],
  join: string,
  policy:
    | { kind: "fail-fast" }
    | { kind: "all-settled" }
    | { kind: "any" }
    | { kind: "quorum"; k: number },
  maxConcurrency?: number,
) {
  return {
    kind: "parallel" as const,
    siblings,
    join,
    policy,
    ...(maxConcurrency !== undefined && { maxConcurrency }),
  };
}

async function loaded(file: string): Promise<PipelineDefinition> {
  const result = file.endsWith(".yaml")
    ? await loadPipelineFile(file)
    : await loadWorkflowPipeline(file);
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  return result.value;
}

const BUNDLED = [
  "code-review.yaml",
  "code-review-parallel.yaml",
  "task-lifecycle.yaml",
  "arena-debate.yaml",
  // Its code-review workflow runs only inside it, as a sub-pipeline stage.
  "pi-release/release",
];

/** The root machine of a run of the pipeline, as the run's own inspection reports it: the run is stopped at once. */
async function machineOfARun(pipeline: PipelineDefinition): Promise<AnyStateMachine> {
  let machine: AnyStateMachine | undefined;
  const started = await startRun(pipeline, {
    host: harness("stages: {}").host,
    runId: "the-run",
    ctx: { task: "t" },
    inspect: {
      next: (event: InspectionEvent) => {
        if (event.type === "@xstate.actor" && event.actorRef.sessionId === event.rootId)
          machine ??= (event.actorRef as unknown as { logic: AnyStateMachine }).logic;
      },
    },
  });
  if (!started.ok) throw started.error;
  started.value.stop();
  await started.value.result;
  if (!machine) throw new Error("the run reported no root actor");
  return machine;
}

/** A machine's states and transitions, read from its state nodes (a targetless one drawn back to its source). */
function structureOf(machine: AnyStateMachine) {
  const states: string[] = [];
  const transitions: string[] = [];
  const visit = (node: AnyStateNode) => {
    states.push(node.id);
    const all = [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
    for (const t of all)
      for (const target of t.target ?? [node])
        transitions.push(
          `${node.id} -> ${target.id} [${t.eventType || "always"}${t.description ? `: ${t.description}` : ""}]`,
        );
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return { states: states.sort(), transitions: transitions.sort() };
}

function graphStructure(graph: JsonNode) {
  const states: string[] = [];
  const transitions: string[] = [];
  const visit = (node: JsonNode) => {
    states.push(node.id);
    for (const e of node.edges)
      transitions.push(
        `${e.source} -> ${e.target} [${e.label.text}${e.description ? `: ${e.description}` : ""}]`,
      );
    node.children.forEach(visit);
  };
  visit(graph);
  return { states: states.sort(), transitions: transitions.sort() };
}

const CONTROL = /\[(OVERRIDE|REDO|CANCEL)\]$/;

/** The chart's states (a group's siblings are not states) and its transitions, labels split. */
function chartStructure(chart: Chart) {
  const states: string[] = [];
  const visit = (node: ChartNode) => {
    if (node.type !== "sibling") states.push(node.id);
    node.children.forEach(visit);
  };
  visit(chart.root);
  const transitions = chart.edges.flatMap((e) =>
    e.label.split(" / ").map((label) => `${e.source} -> ${e.target} [${label}]`),
  );
  return { states: states.sort(), transitions: transitions.sort() };
}

/** A machine's transitions as the chart labels them: by description, else by event; control events left out. */
function asCharted(transitions: string[]): string[] {
  return [
    ...new Set(
      transitions
        .filter((t) => !CONTROL.test(t))
        .map((t) =>
          t.replace(
            /\[([^\]:]+)(?:: ([^\]]+))?\]$/,
            (_, event, description) => `[${description ?? event}]`,
          ),
        ),
    ),
  ].sort();
}

describe.each([
  ...BUNDLED.map((name) => [name, () => loaded(join(MACHINES_DIR, name))] as const),
  [
    "every shape (groups of every policy, capped, code, command, ask, sub-pipeline stages)",
    async () => everyShape(),
  ] as const,
])("the machine a run of %s executes", (_, load) => {
  it("is the machine graph --format json, the chart and the model are drawn from, sub-pipelines' too", async () => {
    const pipeline = await load();
    const run = await machineOfARun(pipeline);
    const ran = structureOf(run);
    expect(ran.states.length).toBeGreaterThan(3);
    expect(
      graphStructure(JSON.parse(renderGraph(compiledPipeline(pipeline), "json", pipeline))),
    ).toEqual(ran);
    expect(structureOf(modelMachine(pipeline))).toEqual(ran);
    const chart = chartStructure(pipelineChart(pipeline));
    expect(chart.states).toEqual(ran.states);
    expect(chart.transitions).toEqual(asCharted(ran.transitions));
    // Each sub-pipeline stage's chart is its machine's, the one the run invokes.
    const subs = (node: ChartNode): ChartNode[] => [
      ...(node.sub ? [node] : []),
      ...node.children.flatMap(subs),
    ];
    for (const node of subs(pipelineChart(pipeline).root)) {
      const invoked = run.implementations.actors[`pipeline:${node.stage}`] as AnyStateMachine;
      expect(chartStructure(node.sub as Chart).states).toEqual(structureOf(invoked).states);
      expect(chartStructure(node.sub as Chart).transitions).toEqual(
        asCharted(structureOf(invoked).transitions),
      );
    }
  });
});

describe("xstate/graph on the machine a run executes", () => {
  it("finds the paths to an end that pipelinePaths lists, each taken by the run's own transitions", async () => {
    const pipeline = await loaded(join(MACHINES_DIR, "code-review-parallel.yaml"));
    const run = await machineOfARun(pipeline);
    const listed = pipelinePaths(pipeline);
    type Step = { type: string; outcome: string; stage: string };
    const found = getShortestPaths(run, {
      input: { runId: "model", ctx: listed.ctx },
      events: (state) =>
        [...entriesOf<number>(state.context.visits)].some(([, n]) => n > 3)
          ? []
          : activeStages(state, pipeline).flatMap((stage) =>
              stageOutcomes(pipeline, stage)
                .outcomes.filter((o) => !o.suspends && o.drive.kind !== "inputs-refused")
                .map((o) => ({ ...stageDone(stage, resultFor(o)), outcome: o.name, stage })),
            ),
      serializeState: (state) =>
        JSON.stringify([state.value, state.context.visits, state.context.groups]),
    });
    const ended = found
      .filter((p) => ["done", "failed"].includes(p.state.value as string))
      .map((p) =>
        p.steps
          .flatMap(({ event }) =>
            "outcome" in event ? [`${(event as Step).stage}: ${(event as Step).outcome}`] : [],
          )
          .join(" → "),
      );
    const listedEnded = listed.paths
      .filter((p) => p.end !== "suspended")
      .map((p) => p.steps.map((s) => `${s.stage}: ${s.outcome}`).join(" → "));
    expect(ended.length).toBeGreaterThan(5);
    for (const path of ended) expect(listedEnded).toContain(path);
  });
});
