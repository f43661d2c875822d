import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { demoProject, runPipelineIn, storeCommand } from "../support/cli.js";

/** A price for the bundled code-review script, as a user's price file gives it. */
const SCRIPT_PRICE = "scripted:code-review.script.yaml: {input: 3, output: 15}\n";

describe("the cost of a run", () => {
  it("is shown per stage and for the run at the prices of a --prices file, kept for the run", async () => {
    const project = demoProject();
    const prices = join(project, "prices.yaml");
    writeFileSync(prices, SCRIPT_PRICE);
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename",
      "--headless",
      "--prices",
      prices,
      "--json",
    );
    expect(run.code).toBe(0);
    const { runId } = JSON.parse(run.stdout.trim().split("\n").at(-1) as string);

    const shown = JSON.parse((await storeCommand(project, "show", runId, "--json")).stdout);
    const { total, stages, unpricedModels } = shown.tokens;
    expect(unpricedModels).toEqual([]);
    expect(total.unpricedTurns).toBe(0);
    expect(total.inputTokens).toBeGreaterThan(0);
    expect(total.costUsd).toBeCloseTo((total.inputTokens * 3 + total.outputTokens * 15) / 1e6, 9);
    const sum = stages.reduce((s: number, stage: { costUsd: number }) => s + stage.costUsd, 0);
    expect(sum).toBeCloseTo(total.costUsd, 12);
    // Kept with the run: a resume or a worker reckons the rest of it at the same prices.
    expect(shown.options.prices).toBe(prices);

    const text = (await storeCommand(project, "show", runId)).stdout;
    expect(text).toMatch(
      new RegExp(
        `tokens: ${total.totalTokens} \\(${total.inputTokens} in, ${total.outputTokens} out\\) · \\$0\\.\\d+\\n`,
      ),
    );
    expect(text).not.toContain("cost not counted");
  });

  it("is said to be unknown for a model without a price, its tokens still counted", async () => {
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "rename", "--headless", "--json");
    const { runId } = JSON.parse(run.stdout.trim().split("\n").at(-1) as string);
    const text = (await storeCommand(project, "show", runId)).stdout;
    expect(text).toMatch(/tokens: \d+ \(\d+ in, \d+ out\)\n/);
    expect(text).toContain(
      "cost not counted for scripted:code-review.script.yaml: no price (give one with --prices)",
    );
  });

  it("refuses a run whose price file is invalid, with its code, storing nothing", async () => {
    const project = demoProject();
    const prices = join(project, "prices.yaml");
    writeFileSync(prices, "scripted:code-review.script.yaml: {input: three, output: 15}\n");
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename",
      "--headless",
      "--prices",
      prices,
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(
      /^Validation\/PriceFileInvalid: the price file .*prices\.yaml is invalid: scripted:code-review\.script\.yaml\.input \(line 1\): must be a number of US dollars per million tokens\n$/,
    );
    expect(JSON.parse((await storeCommand(project, "runs", "--json")).stdout)).toEqual([]);
  });
});
