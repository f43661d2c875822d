import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import type { StepView } from "../../src/inspect/steps.js";
import { demoProject, REPO_ROOT, runCli, storeOf, summaryOf } from "../support/cli.js";
import { launch, missingBrowser, screenshot, watchedPage } from "./chromium.js";

const skip = missingBrowser();
const TASK = ["--task", "rename auth to authentication"];

/** A copy of code-review-parallel whose test stage never submits (it fails) while lint's model is still answering. */
function failFastPipeline(dir: string): string {
  const yaml = readFileSync(
    join(REPO_ROOT, "machines/code-review-parallel.yaml"),
    "utf8",
  ).replaceAll("../stages/", `${join(REPO_ROOT, "stages")}/`);
  const script = readFileSync(join(REPO_ROOT, "machines/code-review-parallel.script.yaml"), "utf8");
  const plan = script.indexOf("  plan:\n");
  const grep = script.indexOf("    - tool: Grep\n      args: { pattern: auth }");
  const test = script.indexOf("  test:\n");
  const review = script.indexOf("  review:\n");
  // With an immediate reply, lint's own failure (its Edit is outside its envelope, and its
  // script then runs out) raced test's, and won it now and then under load.
  const changed = `${script.slice(0, plan)}  plan:\n${script.slice(grep, test)}  test:\n    - text: "I will not run the tests."\n  lint:\n    - tool: Edit\n      args: { path: src/auth.ts, old: "export const auth", new: "export const x" }\n      delayMs: 60000\n${script.slice(review)}`;
  writeFileSync(join(dir, "ff.yaml"), yaml);
  writeFileSync(join(dir, "ff.script.yaml"), changed);
  return join(dir, "ff.yaml");
}

describe.skipIf(skip)(`the visualizer in Chromium${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let browser: Browser;
  let server: InspectServer;
  let project: string;
  let port = 0;
  const cli = (...argv: string[]) =>
    runCli(...argv, "--root", project, "--store", storeOf(project));
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  beforeAll(async () => {
    project = demoProject();
    browser = await launch();
    server = await startInspectServer({
      storePath: storeOf(project),
      port: 0,
      resumeRuns: true,
    });
    port = server.port;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("highlights a live run's states as they change, and approving its grant on the page lets it go on", async () => {
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    const running = cli(
      "run",
      "code-review",
      ...TASK,
      "--run-id",
      "live-1",
      // No terminal here: --wait-for-page makes the page the one who answers grants live.
      "--inspect",
      String(port),
      "--wait-for-page",
      "--json",
    );
    await expect
      .poll(async () => (await fetch(url("/api/v1/runs/live-1"))).status, { timeout: 20000 })
      .toBe(200);
    await page.goto(url("/runs/live-1"));
    // Plan asks for Edit, out of its envelope: the run waits in plan, in its Act state.
    await page.locator('[data-state="plan"][data-active="true"]').waitFor();
    await page.locator('[data-state="plan.act"][data-active="true"]').waitFor();
    // The banner says why the call needs a grant, and shows the call's arguments whole.
    const banner = page.locator(".grant[data-proposal]");
    await expect
      .poll(() => banner.locator("[data-grant-reason]").textContent())
      .toBe("Edit is not among plan's tools (Read, Grep, Glob)");
    const args = JSON.parse((await banner.locator("[data-grant-args]").textContent()) ?? "");
    expect(args).toEqual({
      path: "src/auth.ts",
      old: "export const auth",
      new: "export const authentication",
    });
    await screenshot(page, "live-grant");
    await page.locator('[data-grant][data-decision="approve"]').click();
    const finished = await running;
    expect(finished.code).toBe(0);
    await page.locator('.run-head .status[data-status="done"]').waitFor();
    await page.locator('[data-state="code-review.done"][data-active="true"]').waitFor();
    expect(await page.locator('[data-state="plan"]').getAttribute("data-active")).toBe("false");
    const approved = await (await fetch(url("/api/v1/runs/live-1/audit"))).json();
    expect(approved).toContainEqual(
      expect.objectContaining({
        type: "ToolApproved",
        stageId: "plan",
        payload: expect.objectContaining({ tool: "Edit", source: "grant" }),
      }),
    );
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("cancels a live run from the page: its process applies it, audited as asked by the visualizer", async () => {
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    const slowScript = join(project, "slow.script.yaml");
    writeFileSync(slowScript, "stages:\n  plan:\n    - text: thinking\n      delayMs: 600000\n");
    const running = cli(
      "run",
      "code-review",
      ...TASK,
      "--run-id",
      "live-cancel",
      "--model",
      `scripted:${slowScript}`,
      "--headless",
      "--json",
    );
    await expect
      .poll(async () => (await fetch(url("/api/v1/runs/live-cancel"))).status, { timeout: 20000 })
      .toBe(200);
    await page.goto(url("/runs/live-cancel"));
    await page.locator('[data-state="plan"][data-active="true"]').waitFor();
    await page.locator('[data-control="cancel"]').click();
    // The controls hide once the run is no longer running: read the answer, visible or not.
    await expect
      .poll(() => page.locator("[data-control-result]").textContent(), { timeout: 20000 })
      .toBe("CANCEL applied");
    await running;
    await page.locator('.run-head .status[data-status="cancelled"]').waitFor();
    const audit = await (await fetch(url("/api/v1/runs/live-cancel/audit"))).json();
    expect(audit).toContainEqual(
      expect.objectContaining({
        type: "ControlRequested",
        payload: expect.objectContaining({
          requestedBy: expect.objectContaining({ by: "visualizer" }),
        }),
      }),
    );
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("replays a stored run: the scrubber at step k shows the run as it was at step k", async () => {
    const done = summaryOf((await cli("run", "code-review-parallel", ...TASK, "--json")).stdout);
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url(`/runs/${done.runId}`));
    await page.locator('[data-state="code-review-parallel.done"][data-active="true"]').waitFor();
    const steps = (await (await fetch(url(`/api/v1/runs/${done.runId}/steps`))).json()) as Array<{
      step: number;
    }>;
    const views = await Promise.all(
      steps.map(
        async ({ step }) =>
          (
            await fetch(url(`/api/v1/runs/${done.runId}/steps/${step}`))
          ).json() as Promise<StepView>,
      ),
    );
    const inParallel = views.find((v) =>
      v.state.active.includes("code-review-parallel.execute_parallel"),
    );
    if (!inParallel) throw new Error("no step of the run is inside the parallel group");
    await page.locator("[data-scrubber]").fill(String(inParallel.step));
    for (const stage of ["test", "lint"])
      await page.locator(`[data-state="${stage}"][data-active="true"]`).waitFor();
    expect(await page.locator('[data-state="plan"]').getAttribute("data-active")).toBe("false");
    expect(
      await page.locator('[data-state="code-review-parallel.done"]').getAttribute("data-active"),
    ).toBe("false");
    // The timeline shows the events up to that step; later ones are dimmed.
    expect(
      await page.locator(`tr[data-seq="${inParallel.lastSeq}"]`).getAttribute("class"),
    ).not.toContain("future");
    expect(
      await page.locator(`tr[data-seq="${inParallel.lastSeq + 1}"]`).getAttribute("class"),
    ).toContain("future");
    // A stage's description is its box's tooltip, and heads its details.
    expect(await page.locator('[data-state="review"] > title').textContent()).toMatch(
      /^review: Judge the change against the task/,
    );
    await page.locator('[data-state="review"]').click();
    await page.locator(".details .description").getByText("Judge the change").waitFor();
    await page.locator('[data-state="plan"]').click();
    await page.locator(".details .transcript li").first().waitFor();
    await screenshot(page, "replay");
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("shows a fail-fast fan-out's failed sibling and the cancelled one", async () => {
    const pipeline = failFastPipeline(project);
    const failed = await cli(
      "run",
      pipeline,
      ...TASK,
      "--headless",
      "--inspect",
      String(port),
      "--json",
    );
    expect(failed.code).toBe(1);
    const { runId } = summaryOf(failed.stdout);
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url(`/runs/${runId}`));
    await page.locator('[data-state="test"][data-outcome="fail"]').waitFor();
    await page.locator('[data-state="lint"][data-outcome="cancelled"]').waitFor();
    await page.locator('[data-state="code-review-parallel.failed"][data-active="true"]').waitFor();
    await screenshot(page, "fail-fast");
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("fits a wide statechart into the page on load, and zooms in and back to fit", async () => {
    const done = summaryOf((await cli("run", "code-review-parallel", ...TASK, "--json")).stdout);
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url(`/runs/${done.runId}`));
    const host = page.locator(".chart-viewport");
    const last = page.locator('[data-state="code-review-parallel.done"]');
    await last.waitFor();
    const inside = async () => {
      const [outer, inner] = await Promise.all([host.boundingBox(), last.boundingBox()]);
      if (!outer || !inner) throw new Error("the chart is not drawn");
      return inner.x >= outer.x && inner.x + inner.width <= outer.x + outer.width;
    };
    const scrolls = () => host.evaluate((e) => e.scrollWidth > e.clientWidth);
    expect(await inside()).toBe(true);
    expect(await scrolls()).toBe(false);
    for (let i = 0; i < 4; i++) await page.locator('[data-zoom="in"]').click();
    expect(await scrolls()).toBe(true);
    await page.locator('[data-zoom="fit"]').click();
    expect(await scrolls()).toBe(false);
    expect(await inside()).toBe(true);
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("lists the runs, and no request leaves 127.0.0.1", async () => {
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url("/"));
    await page.locator('tr[data-run="live-1"]').waitFor();
    await screenshot(page, "runs");
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
