import { describe, expect, it } from "vitest";
import { activeIds, chartStateOf, lifecyclePhases } from "../../src/inspect/chart-state.js";

describe("the chart state of a run in a parallel group", () => {
  it("marks each sibling's region as the chart draws it, from the siblings the run's context keeps", () => {
    const groups = { fan: { lint: "running", test: "settled", docs: "queued" } };
    const { active } = chartStateOf([
      { value: "fan_parallel", context: { pipelineId: "p", groups }, status: "active" },
    ]);
    const drawn = activeIds("p", { fan_parallel: groups.fan });
    expect([...active].sort()).toEqual([...drawn].sort());
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
