import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/events/audit.js";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import type { Step } from "../../src/inspect/steps.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";
import { launch, missingBrowser, screenshot, watchedPage } from "./chromium.js";
import { STAGE_DELAYS, timedPipeline } from "./timed-pipeline.js";

const skip = missingBrowser();

describe.skipIf(skip)(`a run's timeline in Chromium${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let browser: Browser;
  let server: InspectServer;
  let runId = "";
  let audit: AuditEvent[] = [];
  let steps: Step[] = [];
  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;

  beforeAll(async () => {
    const project = demoProject();
    const done = await runCli(
      ...["run", timedPipeline(project), "--task", "rename auth to authentication"],
      ...["--root", project, "--store", storeOf(project), "--headless", "--json"],
    );
    runId = summaryOf(done.stdout).runId;
    browser = await launch();
    server = await startInspectServer({ storePath: storeOf(project), port: 0 });
    const api = (path: string) => fetch(url(`/api/v1/runs/${runId}${path}`)).then((r) => r.json());
    [audit, steps] = (await Promise.all([api("/audit"), api("/steps")])) as [AuditEvent[], Step[]];
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** The run's page, its durations shown. */
  async function durations(): Promise<ReturnType<typeof watchedPage>> {
    const watched = await watchedPage(browser);
    await watched.page.goto(url(`/runs/${runId}`));
    await watched.page
      .locator('[data-state="code-review-parallel.done"][data-active="true"]')
      .waitFor();
    await watched.page.locator('[data-timeline-view="gantt"]').click();
    await watched.page.locator("[data-bar]").first().waitFor();
    return watched;
  }
  const bar = (page: Page, stage: string) => page.locator(`[data-bar="${runId}/${stage}/1"]`);
  const stepOf = (seq: number) => steps.find((s) => s.lastSeq >= seq)?.step;

  it("draws a bar per stage execution with its duration, the parallel siblings in lanes of their own, and model and tool calls as segments", async () => {
    const { page, offsite, consoleErrors } = await durations();

    const rows = page.locator(".gantt-row");
    expect(await rows.evaluateAll((all) => all.map((r) => r.getAttribute("data-stage")))).toEqual([
      "plan",
      "execute",
      "test",
      "lint",
      "review",
    ]);
    // Each bar is as long as its stage took: plan's three calls of 180 ms at least.
    const planMs = Number(await bar(page, "plan").getAttribute("data-duration-ms"));
    expect(planMs).toBeGreaterThanOrEqual(3 * STAGE_DELAYS.plan);
    expect(await rows.first().locator("[data-duration]").textContent()).toMatch(/^\d+ ms$|s$/);
    const [planBox, reviewBox] = await Promise.all([
      bar(page, "plan").boundingBox(),
      bar(page, "review").boundingBox(),
    ]);
    expect(planBox?.width).toBeGreaterThan(3 * (reviewBox?.width ?? 0));
    // test and lint ran at once: lanes 1 and 2, their bars side by side in time.
    expect(await bar(page, "test").getAttribute("data-lane")).toBe("0");
    expect(await bar(page, "lint").getAttribute("data-lane")).toBe("1");
    const [test, lint] = await Promise.all([
      bar(page, "test").boundingBox(),
      bar(page, "lint").boundingBox(),
    ]);
    if (!test || !lint) throw new Error("the siblings' bars are not drawn");
    expect(lint.x).toBeLessThan(test.x + test.width);
    expect(test.x).toBeLessThan(lint.x + lint.width);
    expect(lint.y).toBeGreaterThan(test.y);
    // A segment per model call and per tool call, each as long as the call.
    const turns = audit.filter((e) => e.type === "ModelTurn");
    const calls = audit.filter((e) => e.type === "ToolSucceeded" || e.type === "ToolFailed");
    expect(await page.locator('.gantt-seg[data-kind="model"]').count()).toBe(turns.length);
    expect(await page.locator('.gantt-seg[data-kind="tool"]').count()).toBe(calls.length);
    const firstTurn = page.locator(`.gantt-seg[data-seq="${turns[0]?.seq}"]`);
    expect(Number(await firstTurn.getAttribute("data-duration-ms"))).toBeGreaterThanOrEqual(
      STAGE_DELAYS.plan,
    );
    expect(await firstTurn.getAttribute("title")).toMatch(
      /^model call: turn 1 · calls Edit · \d+ ms$/,
    );
    await screenshot(page, "timeline-gantt");
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("filters the events and the bars by stage and by event type", async () => {
    const { page, offsite, consoleErrors } = await durations();
    const shown = (selector: string) =>
      page
        .locator(`${selector}:not([hidden])`)
        .evaluateAll((all) => all.map((e) => e.getAttribute("data-stage")));

    await page.locator('[data-filter="stage"]').selectOption("lint");
    expect(await shown(".gantt-row")).toEqual(["lint"]);
    await page.locator('[data-timeline-view="table"]').click();
    const lintEvents = audit.filter((e) => e.stageId === "lint");
    expect(await shown("tr[data-seq]")).toEqual(lintEvents.map(() => "lint"));

    await page.locator('[data-filter="stage"]').selectOption("");
    await page.locator('[data-filter="type"]').selectOption("ToolSucceeded");
    const rows = await page
      .locator("tr[data-seq]:not([hidden])")
      .evaluateAll((all) => all.map((r) => r.getAttribute("data-type")));
    expect(rows).toEqual(audit.filter((e) => e.type === "ToolSucceeded").map((e) => e.type));
    await page.locator('[data-timeline-view="gantt"]').click();
    // Review called no tool: its bar is gone; the others show their tool calls only.
    expect(await shown(".gantt-row")).toEqual(["plan", "execute", "test", "lint"]);
    expect(await page.locator('.gantt-seg[data-kind="model"]:not([hidden])').count()).toBe(0);
    expect(await page.locator('.gantt-seg[data-kind="tool"]:not([hidden])').count()).toBe(
      audit.filter((e) => e.type === "ToolSucceeded").length,
    );
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("moves the scrubber to the step of a bar or a segment clicked, and marks its stage in the chart", async () => {
    const { page, offsite, consoleErrors } = await durations();
    const lintSetUp = audit.find((e) => e.type === "StageSetup" && e.stageId === "lint");
    if (!lintSetUp) throw new Error("lint was never set up");

    // The bar's top edge: below it lie its segments, each a pick of its own.
    await bar(page, "lint").click({ position: { x: 2, y: 1 } });

    const step = stepOf(lintSetUp.seq);
    await expect.poll(() => page.locator("[data-scrubber]").inputValue()).toBe(String(step));
    await page.locator('[data-state="lint"][data-active="true"]').waitFor();
    await page.locator('[data-state="lint"][data-selected="true"]').waitFor();
    expect(await bar(page, "lint").getAttribute("class")).toContain("picked");
    // What came after the step shown is dimmed: review had not started.
    const rowOf = (stage: string) => page.locator(`.gantt-row[data-stage="${stage}"]`);
    expect(await rowOf("review").getAttribute("class")).toContain("future");
    expect(await rowOf("plan").getAttribute("class")).not.toContain("future");

    const reviewTurn = audit.find((e) => e.type === "ModelTurn" && e.stageId === "review");
    if (!reviewTurn) throw new Error("review never called its model");
    await page.locator(`.gantt-seg[data-seq="${reviewTurn.seq}"]`).click();
    await expect
      .poll(() => page.locator("[data-scrubber]").inputValue())
      .toBe(String(stepOf(reviewTurn.seq)));
    await page.locator('[data-state="review"][data-selected="true"]').waitFor();
    expect(await page.locator('[data-state="lint"]').getAttribute("data-selected")).toBe("false");
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
