import { readFileSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";
import { launch, missingBrowser, watchedPage } from "./chromium.js";

const skip = missingBrowser();

describe.skipIf(skip)(`exporting a chart in Chromium${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let browser: Browser;
  let server: InspectServer;
  let project: string;
  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;

  beforeAll(async () => {
    project = demoProject();
    browser = await launch();
    server = await startInspectServer({ storePath: storeOf(project), port: 0 });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("downloads the chart as drawn, the very SVG `graph --format svg` prints", async () => {
    const done = summaryOf(
      (
        await runCli(
          ...["run", "code-review-parallel", "--task", "rename auth to authentication"],
          ...["--json", "--root", project, "--store", storeOf(project)],
        )
      ).stdout,
    );
    const { page, offsite, consoleErrors } = await watchedPage(browser);
    await page.goto(url(`/runs/${done.runId}`));
    await page.locator('[data-state="code-review-parallel.done"]').waitFor();
    const direction = await page.locator(".chart").getAttribute("data-direction");
    expect(direction === "right" || direction === "down").toBe(true);

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.locator('[data-export="svg"]').click(),
    ]);
    expect(download.suggestedFilename()).toBe("code-review-parallel.svg");
    const exported = readFileSync(await download.path(), "utf8");
    const printed = await runCli(
      ...["graph", "code-review-parallel", "--format", "svg", "--direction", String(direction)],
    );
    expect(exported).toBe(printed.stdout);
    // With no page to fit, the command picks what the page picked at this size.
    expect((await runCli("graph", "code-review-parallel", "--format", "svg")).stdout).toBe(
      exported,
    );
    expect(offsite).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("renders on its own: every stage's label drawn inside its box, readable at natural size", async () => {
    const svg = (await runCli("graph", "code-review-parallel", "--format", "svg")).stdout;
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.setContent(svg);
    const labels = await page.locator("g.stage > text.label").evaluateAll((texts) =>
      texts.map((t) => {
        const box = t.getBoundingClientRect();
        const frame = t.parentElement?.querySelector(".frame")?.getBoundingClientRect();
        return {
          text: t.textContent,
          size: Number.parseFloat(t.ownerDocument.defaultView?.getComputedStyle(t).fontSize ?? ""),
          inside:
            frame !== undefined &&
            box.width > 0 &&
            box.left >= frame.left &&
            box.right <= frame.right &&
            box.top >= frame.top &&
            box.bottom <= frame.bottom,
        };
      }),
    );
    expect(labels.map((l) => l.text)).toEqual(
      expect.arrayContaining(["plan", "execute", "test", "lint", "review"]),
    );
    for (const label of labels) {
      expect(label.inside, label.text ?? "").toBe(true);
      expect(label.size).toBeGreaterThanOrEqual(11);
    }
    await page.close();
  });
});
