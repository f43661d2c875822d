import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { DECIDING } from "../support/ask-pipelines.js";
import { runCli, summaryOf } from "../support/cli.js";
import { tempDir } from "../support/stages.js";
import { launch, missingBrowser, screenshot, watchedPage } from "./chromium.js";

const skip = missingBrowser();

describe.skipIf(skip)(
  `answering an ask stage in Chromium${skip ? ` (skipped: ${skip})` : ""}`,
  () => {
    let browser: Browser;
    let server: InspectServer;
    let dir: string;
    let port = 0;
    const url = (path: string) => `http://127.0.0.1:${port}${path}`;

    beforeAll(async () => {
      dir = tempDir();
      writeFileSync(join(dir, "deciding.yaml"), DECIDING);
      writeFileSync(join(dir, "deciding.script.yaml"), "stages: {}\n");
      writeFileSync(
        join(dir, "timed.yaml"),
        DECIDING.replace("id: deciding", "id: timed").replace(
          "        additionalProperties: false\n",
          "        additionalProperties: false\n      timeout: { after: 1h, fallback: fail }\n",
        ),
      );
      writeFileSync(join(dir, "timed.script.yaml"), "stages: {}\n");
      browser = await launch();
      const store = join(dir, "runs.db");
      server = await startInspectServer({
        storePath: store,
        port: 0,
        resumeRuns: true,
      });
      port = server.port;
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    it("shows a live run's question with a form; a refused value says why, a valid one goes to the run", async () => {
      const { page, offsite, consoleErrors } = await watchedPage(browser);
      const running = runCli(
        ...["run", join(dir, "deciding.yaml"), "--root", dir, "--store", join(dir, "runs.db")],
        ...["--run-id", "ask-live", "--inspect", String(port), "--wait-for-page", "--json"],
      );
      await expect
        .poll(async () => (await fetch(url("/api/v1/runs/ask-live"))).status, { timeout: 20000 })
        .toBe(200);
      await page.goto(url("/runs/ask-live"));
      const id = "ask-live/decide/1";
      const form = page.locator(`[data-ask-form="${id}"]`);
      await form.waitFor();
      expect(await form.textContent()).toContain("decide asks: Accept the change?");
      // The values its schema allows are shown with the question.
      expect(await form.locator(`[data-ask-allowed="${id}"]`).textContent()).toBe(
        "decision: one of accepted, rejected",
      );

      await page.locator(`[data-ask-value="${id}"]`).fill('{"decision": "maybe"}');
      await page.locator(`[data-ask="${id}"]`).click();
      const problem = page.locator(`[data-ask-error="${id}"]`);
      await expect
        .poll(() => problem.textContent())
        .toContain("Validation/InputInvalid: the answer to decide does not match its schema");
      expect(await problem.textContent()).toContain("must be equal to one of the allowed values");
      await screenshot(page, "ask-refused");

      await page.locator(`[data-ask-value="${id}"]`).fill('{"decision": "accepted"}');
      await page.locator(`[data-ask="${id}"]`).click();
      const finished = await running;
      expect(finished.code, finished.stderr).toBe(0);
      expect(summaryOf(finished.stdout)).toMatchObject({
        status: "done",
        output: { decision: "accepted" },
      });
      await page.locator('.run-head .status[data-status="done"]').waitFor();
      await form.waitFor({ state: "detached" });
      const audit = await (await fetch(url("/api/v1/runs/ask-live/audit"))).json();
      expect(audit).toContainEqual(
        expect.objectContaining({
          type: "InputAnswered",
          payload: { value: { decision: "accepted" }, by: "visualizer" },
        }),
      );
      expect(offsite).toEqual([]);
      // The refused answer's 400 reply is the only thing the browser reports.
      expect(consoleErrors.filter((e) => !e.includes("status of 400"))).toEqual([]);
    });

    it("shows a suspended question's deadline and the time left, counted down", async () => {
      const { page, consoleErrors } = await watchedPage(browser);
      const suspended = await runCli(
        ...["run", join(dir, "timed.yaml"), "--root", dir, "--store", join(dir, "runs.db")],
        ...["--run-id", "ask-timed", "--json"],
      );
      expect(summaryOf(suspended.stdout)).toMatchObject({ status: "suspended" });
      await page.goto(url("/runs/ask-timed"));
      const badge = page.locator('[data-ask-form="ask-timed/decide/1"] [data-deadline]');
      await badge.waitFor();
      const first = await badge.textContent();
      expect(first).toMatch(/^59m \d\ds left$/);
      await expect.poll(() => badge.textContent(), { timeout: 5000 }).not.toBe(first);
      expect(
        Date.parse((await badge.getAttribute("data-deadline")) ?? "") - Date.now(),
      ).toBeGreaterThan(58 * 60_000);
      expect(consoleErrors).toEqual([]);
    });
  },
);
