import { describe, expect, it } from "vitest";
import { activeIds, chartStateOf } from "../../src/inspect/chart-state.js";

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
