import { describe, expect, it } from "vitest";
import { chartStateOf, lifecyclePhases } from "../../src/inspect/chart-state.js";

describe("the chart state of a run in a parallel group", () => {
  it("marks the group's state and each running sibling the chart draws in it, from the run's context", () => {
    const groups = { fan: { lint: "running", test: "settled", docs: "queued" } };
    const { active } = chartStateOf([
      { value: "fan_parallel", context: { pipelineId: "p", groups }, status: "active" },
    ]);
    expect(active).toEqual(["p", "p.fan_parallel", "p.fan_parallel.lint"]);
  });

  it("adds nothing for a stage outside a group", () => {
    const { active } = chartStateOf([
      { value: "plan", context: { pipelineId: "p", groups: { fan: { lint: "settled" } } } },
    ]);
    expect(active).toEqual(["p", "p.plan"]);
  });
});

describe("the lifecycle phases a running stage lights", () => {
  const phasesIn = (value: unknown) =>
    lifecyclePhases(
      chartStateOf([{ value, context: { stage: { id: "plan" } }, status: "active" }]).stages.plan
        ?.lifecycle,
    );

  it("are Setup, Init and CheckGate while it sets up (one actor runs the three)", () => {
    expect(phasesIn("setup")).toEqual(["setup", "init", "checkGate"]);
  });

  it("are Assert and Exit while it asserts, and the one state otherwise", () => {
    expect(phasesIn("assert")).toEqual(["assert", "exit"]);
    expect(phasesIn({ act: "calling" })).toEqual(["act"]);
    expect(phasesIn("checkGate")).toEqual(["checkGate"]);
  });
});

describe("the chart state of a run in a map group", () => {
  it("lights the stage's one lane while any item runs, and counts its items", () => {
    const groups = {
      plan: {
        "review[0]": "settled",
        "review[1]": "running",
        "review[2]": "running",
        "review[3]": "queued",
      },
    };
    const { active, items } = chartStateOf([
      { value: "plan_parallel", context: { pipelineId: "p", groups }, status: "active" },
    ]);
    expect(active).toEqual(["p", "p.plan_parallel", "p.plan_parallel.review"]);
    expect(items).toEqual({ "p.plan_parallel.review": { total: 4, running: 2, settled: 1 } });
  });
});
