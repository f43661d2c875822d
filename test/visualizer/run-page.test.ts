import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { AuditEvent } from "../../src/events/audit.js";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import type { Step } from "../../src/inspect/steps.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";
import { launch, missingBrowser, watchedPage } from "./chromium.js";

const skip = missingBrowser();
const TASK = ["--task", "rename auth to authentication"];

describe.skipIf(skip)(`a run's page in Chromium${skip ? ` (skipped: ${skip})` : ""}`, () => {
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
    // The store does not exist yet: the first run creates it.
    server = await startInspectServer({ storePath: storeOf(project), port: 0 });
    port = server.port;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("opened before its run exists, waits for it, saying so, and shows the run once it starts", async () => {
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url("/runs/late-1"));
    const waiting = page.locator('[data-waiting="late-1"]');
    await waiting.waitFor();
    expect(await waiting.textContent()).toContain("waiting for run late-1");
    // Still waiting a while later: the page does not give up on a run that is not there yet.
    await page.waitForTimeout(1500);
    expect(await waiting.isVisible()).toBe(true);

    const done = await cli("run", "code-review-parallel", ...TASK, "--run-id", "late-1", "--json");
    expect(summaryOf(done.stdout)).toMatchObject({ runId: "late-1", status: "done" });
    await page.locator('[data-state="code-review-parallel.done"][data-active="true"]').waitFor();
    await page.locator('.run-head .status[data-status="done"]').waitFor();
    expect(await waiting.count()).toBe(0);
    expect(offsite).toEqual([]);
    // The 404s of the run not there yet are what the browser reports; nothing else.
    expect(consoleErrors.filter((e) => !e.includes("status of 404"))).toEqual([]);
  });

  it("moves the scrubber to the step of a timeline row clicked, and marks the row's stage in the chart", async () => {
    const done = summaryOf((await cli("run", "code-review-parallel", ...TASK, "--json")).stdout);
    const api = (path: string) =>
      fetch(url(`/api/v1/runs/${done.runId}${path}`)).then((r) => r.json());
    const [audit, steps] = (await Promise.all([api("/audit"), api("/steps")])) as [
      AuditEvent[],
      Step[],
    ];
    const lintSetUp = audit.find((e) => e.type === "StageSetup" && e.stageId === "lint");
    if (!lintSetUp) throw new Error("lint was never set up");
    const step = steps.find((s) => s.lastSeq >= lintSetUp.seq)?.step;
    if (step === undefined || step === steps.length)
      throw new Error("lint's setup is not in a step before the last");

    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url(`/runs/${done.runId}`));
    await page.locator('[data-state="code-review-parallel.done"][data-active="true"]').waitFor();
    await page.locator(`tr[data-seq="${lintSetUp.seq}"]`).click();

    await expect.poll(() => page.locator("[data-scrubber]").inputValue()).toBe(String(step));
    expect(await page.locator("[data-step-label]").textContent()).toBe(
      `${step} of ${steps.length}`,
    );
    await page.locator('[data-state="lint"][data-active="true"]').waitFor();
    await page.locator('[data-state="lint"][data-selected="true"]').waitFor();
    expect(await page.locator('[data-state="review"]').getAttribute("data-selected")).toBe("false");
    expect(
      await page.locator('[data-state="code-review-parallel.done"]').getAttribute("data-active"),
    ).toBe("false");
    expect(await page.locator(`tr[data-seq="${lintSetUp.seq}"]`).getAttribute("class")).toContain(
      "picked",
    );
    // The row's stage details open beside it, as before.
    await page.locator(".details h2").getByText(`${done.runId}/lint/1`).waitFor();
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("shows every timeline column whole on a page 800 px wide", async () => {
    const done = summaryOf((await cli("run", "code-review-parallel", ...TASK, "--json")).stdout);
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.setViewportSize({ width: 800, height: 900 });
    await page.goto(url(`/runs/${done.runId}`));
    await page.locator('[data-state="code-review-parallel.done"][data-active="true"]').waitFor();
    const timeline = page.locator(".timeline");
    const box = await timeline.boundingBox();
    if (!box) throw new Error("no timeline drawn");
    for (const header of await page.locator(".timeline th").all()) {
      const column = await header.boundingBox();
      expect(column && column.x + column.width).toBeLessThanOrEqual(box.x + box.width + 0.5);
    }
    expect(await timeline.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("lists other XState machines under their heading, and shows no heading while there are none", async () => {
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url("/"));
    await page.locator("tr[data-run]").first().waitFor();
    const heading = page.getByRole("heading", { name: "Other XState machines on the stream" });
    expect(await heading.count()).toBe(0);

    // What `@statelyai/inspect`'s createWebSocketInspector sends of an app's root machine.
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/inspect`);
    await new Promise((resolve, reject) => {
      ws.on("open", resolve);
      ws.on("error", reject);
    });
    ws.send(
      JSON.stringify({
        type: "@xstate.actor",
        sessionId: "x:0",
        rootId: "x:0",
        name: "checkout",
        snapshot: { status: "active", value: "cart" },
      }),
    );
    await heading.waitFor();
    await page.locator(".machines a").getByText("checkout").waitFor();
    ws.close();
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
