import { join } from "node:path";
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { type Chart, chartOfDefinition, pipelineChart } from "../../src/inspect/chart.js";
import { layoutChart } from "../../src/inspect/chart-layout.js";
import { LEGIBLE_SCALE, PAGE_ROOM, scaleToFit } from "../../src/inspect/chart-metrics.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

async function chartOf(file: string): Promise<Chart> {
  const loaded = await loadPipelineFile(join(MACHINES_DIR, file), { importCode: false });
  if (!loaded.ok) throw new Error(loaded.diagnostics.map((d) => d.message).join("; "));
  return pipelineChart(loaded.value);
}

/** Every laid-out box by id, and every laid-out edge, nested ones included. */
function contentsOf(laid: ElkNode) {
  const boxes = new Map<string, ElkNode>();
  const edges: ElkExtendedEdge[] = [];
  const visit = (node: ElkNode): void => {
    edges.push(...((node.edges ?? []) as ElkExtendedEdge[]));
    for (const child of node.children ?? []) {
      boxes.set(child.id, child);
      visit(child);
    }
  };
  visit(laid);
  return { boxes, edges };
}

const inside = (point: { x: number; y: number } | undefined, box: ElkNode | undefined): boolean =>
  point !== undefined &&
  box !== undefined &&
  point.x >= (box.x ?? 0) - 2 &&
  point.x <= (box.x ?? 0) + (box.width ?? 0) + 2 &&
  point.y >= (box.y ?? 0) - 2 &&
  point.y <= (box.y ?? 0) + (box.height ?? 0) + 2;

/** The edges whose route does not run from their source's box to their target's. */
function astray(laid: ElkNode): string[] {
  const { boxes, edges } = contentsOf(laid);
  return edges.flatMap((edge) => {
    const from = edge.sections?.[0]?.startPoint;
    const to = edge.sections?.at(-1)?.endPoint;
    return inside(from, boxes.get(edge.sources[0] as string)) &&
      inside(to, boxes.get(edge.targets[0] as string))
      ? []
      : [edge.id];
  });
}

describe("a chart's layout", () => {
  it.each(["task-lifecycle.yaml", "arena-debate.yaml", "code-review-parallel.yaml"])(
    "of %s routes every edge it draws from its source to its target, both ways",
    async (file) => {
      const layouts = await layoutChart(await chartOf(file));
      expect(astray(layouts.right)).toEqual([]);
      expect(astray(layouts.down)).toEqual([]);
    },
  );

  it("wraps a chain too long for the page into columns, so that one way shows it legibly", async () => {
    const layouts = await layoutChart(await chartOf("arena-debate.yaml"));
    const best = Math.max(
      scaleToFit(layouts.right, PAGE_ROOM),
      scaleToFit(layouts.down, PAGE_ROOM),
    );
    expect(best).toBeGreaterThanOrEqual(LEGIBLE_SCALE);
  });

  it("lays out no edge for a stage's failing, and keeps the ends last", async () => {
    const chart = await chartOf("task-lifecycle.yaml");
    const { edges, boxes } = contentsOf((await layoutChart(chart)).down);
    expect(edges.filter((e) => e.targets[0] === "task-lifecycle.failed")).toEqual([]);
    const bottom = (id: string) => (boxes.get(id)?.y ?? 0) + (boxes.get(id)?.height ?? 0);
    for (const end of ["done", "failed", "cancelled"])
      for (const stage of ["planning", "codegen", "accept", "revert"])
        expect(boxes.get(`task-lifecycle.${end}`)?.y).toBeGreaterThanOrEqual(
          bottom(`task-lifecycle.${stage}`),
        );
  });

  it("lays out another app's machine whose transitions cross its nested states' borders", async () => {
    const chart = chartOfDefinition(
      JSON.stringify({
        id: "checkout",
        initial: "cart",
        states: {
          cart: { on: { PAY: "payment.card" } },
          payment: {
            initial: "card",
            states: {
              card: { on: { FAIL: "#checkout.cart", NEXT: "confirm" } },
              confirm: { on: { OK: "#checkout.done" } },
            },
          },
          done: { type: "final" },
        },
      }),
    );
    const layouts = await layoutChart(chart);
    for (const laid of [layouts.right, layouts.down]) {
      const { boxes } = contentsOf(laid);
      expect([...boxes.keys()]).toEqual(
        expect.arrayContaining(["checkout.cart", "checkout.payment.card", "checkout.done"]),
      );
      expect(astray(laid)).toEqual([]);
    }
  });
});
