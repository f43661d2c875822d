import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject } from "../support/cli.js";
import { codeReviewSaying, PLAN_SAYS } from "../support/streaming-runs.js";
import { launch, missingBrowser, watchedPage } from "./chromium.js";

const skip = missingBrowser();

/** The text before the last whitespace of `text`: what a reply held there has told so far. */
const toLastSpace = (text: string) => text.slice(0, text.lastIndexOf(" ") + 1);

describe.skipIf(skip)(
  `a streaming reply on the run's page in Chromium${skip ? ` (skipped: ${skip})` : ""}`,
  () => {
    let browser: Browser;
    let server: InspectServer;
    let project: string;

    beforeAll(async () => {
      project = demoProject();
      browser = await launch();
      server = await startInspectServer({ storePath: join(project, "runs.db"), port: 0 });
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    it("shows in the stage's transcript panel as it comes, then the stored transcript once its turn is recorded", async () => {
      const review = await codeReviewSaying(project);
      let pieces = 0;
      // Plan's first reply, caught half-way: held before its fourth piece of text.
      const midReply = review.pauseBefore((part, call) => {
        if (call !== 1 || part.type !== "text-delta") return false;
        pieces += 1;
        return pieces === 4;
      });
      const { run, stream } = await review.start("streamed-1", server.streamUrl);
      if (!run.ok) throw run.error;
      await midReply.held;

      const { page, offsite, consoleErrors } = await watchedPage(browser);
      await page.goto(`http://127.0.0.1:${server.port}/runs/streamed-1`);
      await page.locator('[data-state="plan"][data-active="true"]').waitFor();
      await page.locator('[data-state="plan"]').click();
      await page.locator(".details h2").getByText("streamed-1/plan/1").waitFor();
      const streaming = page.locator('[data-streaming="streamed-1/plan/1"]');
      // The page opened mid-reply: it shows the text so far, as the server held it.
      const soFar = toLastSpace(PLAN_SAYS.slice(0, 48));
      await expect.poll(() => streaming.locator("pre").textContent()).toBe(soFar);
      expect(await streaming.locator(".role").textContent()).toBe("assistant · streaming");

      // More of the reply comes while the page is open: held before the text's end this time.
      const textEnd = review.pauseBefore((part) => part.type === "text-end");
      midReply.release();
      await textEnd.held;
      await expect.poll(() => streaming.locator("pre").textContent()).toBe(toLastSpace(PLAN_SAYS));
      // Nothing of it is stored yet: the stored transcript has no reply of the model's.
      expect(await page.locator(".transcript li.msg-assistant:not([data-streaming])").count()).toBe(
        0,
      );

      // Plan's next call, a tool call, held before its arguments end: the call being written shows,
      // and the first reply, its turn recorded, is the stored transcript's now.
      const callEnd = review.pauseBefore((part) => part.type === "tool-input-end");
      textEnd.release();
      await callEnd.held;
      await expect
        .poll(() => streaming.locator("pre").textContent())
        .toMatch(/^Edit\(\{"path":"src\/auth\.ts","old":"export const /);
      expect(await streaming.getAttribute("data-streaming-turn")).toBe("2");
      const stored = page.locator(".transcript li.msg-assistant:not([data-streaming]) pre");
      await expect.poll(() => stored.allTextContents()).toEqual([PLAN_SAYS]);

      callEnd.release();
      expect((await run.value.result).status).toBe("done");
      stream.stop();
      await page.locator('.run-head .status[data-status="done"]').waitFor();
      // Every reply was recorded: none streams, and the stored transcript holds them all.
      await expect.poll(() => page.locator("[data-streaming]").isHidden()).toBe(true);
      await expect.poll(() => stored.count()).toBeGreaterThan(1);
      expect(offsite).toEqual([]);
      expect(consoleErrors).toEqual([]);
      await page.close();
      review.close();
    });
  },
);
