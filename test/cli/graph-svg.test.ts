import { join } from "node:path";
import type { ElkNode } from "elkjs/lib/elk-api.js";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { pipelineChart } from "../../src/inspect/chart.js";
import { layoutChart } from "../../src/inspect/chart-layout.js";
import { runCli } from "../support/cli.js";
import { releaseRoot } from "../support/pi-workflows.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

/** Each laid-out state's box, by its id: where the visualizer's layout puts it. */
function boxesOf(laid: ElkNode): Map<string, string> {
  const boxes = new Map<string, string>();
  const walk = (node: ElkNode): void => {
    boxes.set(node.id, `translate(${node.x ?? 0} ${node.y ?? 0})`);
    node.children?.forEach(walk);
  };
  laid.children?.forEach(walk);
  return boxes;
}

/** The `data-state` and `transform` of every state box in an SVG, in order. */
const statesIn = (svg: string): Array<[string, string]> =>
  [...svg.matchAll(/<g class="state[^"]*" data-state="([^"]+)" transform="([^"]+)"/g)].map((m) => [
    m[1] as string,
    m[2] as string,
  ]);

async function layoutsOf(name: string) {
  const loaded = await loadPipelineFile(join(MACHINES_DIR, `${name}.yaml`));
  if (!loaded.ok) throw new Error(loaded.diagnostics.map((d) => d.message).join("; "));
  return layoutChart(pipelineChart(loaded.value));
}

describe("stagechart graph --format svg", () => {
  it("prints the visualizer's chart as one standalone SVG, each state where the ELK layout puts it", async () => {
    const drawn = await runCli(
      ...["graph", "code-review-parallel", "--format", "svg", "--direction", "down"],
    );
    expect(drawn.stderr).toBe("");
    expect(drawn.code).toBe(0);
    const svg = drawn.stdout;
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.endsWith("</svg>\n")).toBe(true);
    expect(svg.match(/<svg /g)).toHaveLength(1);
    // Its styles travel with it: nothing refers outside the file.
    expect(svg).toContain("<style>");
    expect(svg).not.toMatch(/href="(?!#)|url\((?!#)/);

    const states = statesIn(svg);
    expect(states.map(([state]) => state)).toEqual(
      expect.arrayContaining(["plan", "execute", "test", "lint", "review"]),
    );
    const laid = boxesOf((await layoutsOf("code-review-parallel")).down);
    const ids: Record<string, string> = {
      plan: "code-review-parallel.plan",
      lint: "code-review-parallel.execute_parallel.lint",
      review: "code-review-parallel.review",
    };
    for (const [state, id] of Object.entries(ids))
      expect(states.find(([s]) => s === state)?.[1]).toBe(laid.get(id));
    // The group is named by its siblings: its compiled state's name is in no text drawn.
    expect(svg).toContain(">test ∥ lint · fail-fast</text>");
    expect(svg).not.toMatch(/>[^<]*execute_parallel[^<]*</);
    expect(svg).toContain(">fail-fast policy met</text>");
    // A stage's description is its box's tooltip, as on the page.
    expect(svg).toMatch(/<title>review: Judge the change against the task/);
  });

  it("lays the chart out as asked, and by default as the page at 1440×900 would", async () => {
    const across = await runCli("graph", "code-review", "--format", "svg", "--direction", "right");
    const down = await runCli("graph", "code-review", "--format", "svg", "--direction", "down");
    const layouts = await layoutsOf("code-review");
    expect(statesIn(across.stdout).find(([s]) => s === "review")?.[1]).toBe(
      boxesOf(layouts.right).get("code-review.review"),
    );
    expect(statesIn(down.stdout).find(([s]) => s === "review")?.[1]).toBe(
      boxesOf(layouts.down).get("code-review.review"),
    );
    expect(across.stdout).not.toBe(down.stdout);
    // task-lifecycle is larger on the page top to bottom: the page draws it so.
    const byDefault = await runCli("graph", "task-lifecycle", "--format", "svg");
    const asked = await runCli(
      ...["graph", "task-lifecycle", "--format", "svg", "--direction", "down"],
    );
    expect(byDefault.stdout).toBe(asked.stdout);
  });

  it("draws a pi-workflows directory, its subworkflow nested", async () => {
    const drawn = await runCli("graph", join(releaseRoot(), "release"), "--format", "svg");
    expect(drawn.code).toBe(0);
    const states = statesIn(drawn.stdout).map(([state]) => state);
    expect(states).toEqual(
      expect.arrayContaining(["build", "code-review", "static-analysis", "publish"]),
    );
  });

  it("refuses a direction it does not know", async () => {
    const drawn = await runCli(
      ...["graph", "code-review", "--format", "svg", "--direction", "sideways"],
    );
    expect(drawn.code).toBe(2);
    expect(drawn.stderr).toContain("argument 'sideways' is invalid");
  });
});
