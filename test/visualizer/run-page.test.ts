import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
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
});
