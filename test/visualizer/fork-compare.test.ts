import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/events/audit.js";
import type { RunDiff } from "../../src/inspect/run-diff.js";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import type { Step } from "../../src/inspect/steps.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";
import { openStore } from "../support/live-runs.js";
import { launch, missingBrowser, screenshot, watchedPage } from "./chromium.js";
import { timedPipeline } from "./timed-pipeline.js";

const skip = missingBrowser();
type Snapshot = { value: unknown; context: { ctx: Record<string, unknown> } };

describe.skipIf(skip)(
  `time travel and comparison in Chromium${skip ? ` (skipped: ${skip})` : ""}`,
  () => {
    let browser: Browser;
    let server: InspectServer;
    let project: string;
    let pipeline: string;
    const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
    const run = async (...flags: string[]): Promise<string> => {
      const done = await runCli(
        ...["run", pipeline, "--task", "rename auth to authentication"],
        ...["--root", project, "--store", storeOf(project), "--headless", "--json", ...flags],
      );
      return summaryOf(done.stdout).runId;
    };
    const api = <T>(path: string): Promise<T> =>
      fetch(url(`/api/v1${path}`)).then((r) => r.json() as Promise<T>);

    beforeAll(async () => {
      project = demoProject();
      pipeline = timedPipeline(project);
      browser = await launch();
      // As `stagechart inspect` serves: the page's forks are started here.
      server = await startInspectServer({ storePath: storeOf(project), port: 0, resumeRuns: true });
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    it("forks a new run from the step the scrubber shows, with a ctx change, and opens it: its history starts from that step", async () => {
      const source = await run();
      const [audit, steps] = await Promise.all([
        api<AuditEvent[]>(`/runs/${source}/audit`),
        api<Step[]>(`/runs/${source}/steps`),
      ]);
      const planExited = audit.find((e) => e.type === "StageExited" && e.stageId === "plan");
      const at = steps.find((s) => s.lastSeq >= (planExited?.seq ?? 0))?.step;
      if (at === undefined) throw new Error("plan never ended");
      const { page, offsite, consoleErrors } = await watchedPage(browser);
      await page.goto(url(`/runs/${source}`));
      await page.locator('[data-state="code-review-parallel.done"][data-active="true"]').waitFor();
      await page.locator("[data-scrubber]").fill(String(at));
      await expect
        .poll(() => page.locator("[data-fork-open]").textContent())
        .toBe(`Fork from step ${at}…`);
      await page.locator("[data-fork-open]").click();

      // A ctx change the pipeline's schema refuses: the server's refusal, and nothing opened.
      await page.locator("[data-fork-set]").fill("task=5");
      await page.locator("[data-fork]").click();
      await expect
        .poll(() => page.locator("[data-fork-error]").textContent())
        .toMatch(/^Validation\/RunContextInvalid: ctx does not match/);
      expect(new URL(page.url()).pathname).toBe(`/runs/${source}`);

      await page.locator("[data-fork-set]").fill("task=rename auth to authn");
      await screenshot(page, "fork-from-step");
      await page.locator("[data-fork]").click();
      await page.waitForURL((address) => address.pathname !== `/runs/${source}`);
      const forked = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
      await page.locator(`[data-forked-from="${source}"]`).waitFor();
      expect(await page.locator(`[data-forked-from="${source}"]`).textContent()).toBe(
        `forked from ${source} at step ${at} · compare`,
      );
      await page.locator('.run-head .status[data-status="done"]').waitFor({ timeout: 20_000 });

      // Through the store: the fork opens with RunForked from that step, on that step's snapshot.
      const store = openStore(storeOf(project));
      try {
        expect(store.auditOf(forked)[0]).toMatchObject({
          type: "RunForked",
          payload: { from: { runId: source, step: at }, set: { task: "rename auth to authn" } },
        });
        const first = store.snapshotAtStep(forked, 1) as Snapshot;
        const then = store.snapshotAtStep(source, at) as Snapshot;
        expect(first.value).toEqual(then.value);
        expect(first.context.ctx).toEqual({ ...then.context.ctx, task: "rename auth to authn" });
        expect(store.getRun(forked)).toMatchObject({ ok: true, value: { status: "done" } });
      } finally {
        store.close();
      }
      // The fork's page links to the comparison with its source.
      await page.locator("[data-compare-link]").click();
      await page.locator("[data-compare-stages]").waitFor();
      expect(await page.locator("[data-forked]").textContent()).toContain(
        `B was forked from A at step ${at}, with task="rename auth to authn"`,
      );
      expect(offsite).toEqual([]);
      // The refused fork's 400 is what the browser reports; nothing else.
      expect(consoleErrors.filter((e) => !e.includes("status of 400"))).toEqual([]);
    });

    it("compares two runs picked on the runs list: where they part, both paths on the chart, each stage's durations and tokens with deltas", async () => {
      const a = await run();
      // b's plan does not try the Edit it may not make: the paths part at plan's first turn.
      const script = readFileSync(pipeline.replace(/\.yaml$/, ".script.yaml"), "utf8");
      const direct = script.replace(/ {4}- delayMs: \d+\n {6}tool: Edit\n {6}args: .*\n/, "");
      expect(direct).not.toBe(script);
      writeFileSync(join(project, "direct.script.yaml"), direct);
      const b = await run("--model", `scripted:${join(project, "direct.script.yaml")}`);
      const diff = await api<RunDiff>(`/compare/${a}/${b}`);

      const { page, offsite, consoleErrors } = await watchedPage(browser);
      await page.goto(url("/"));
      await page.locator(`[data-pick-run="${a}"]`).check();
      await page.locator(`[data-pick-run="${b}"]`).check();
      await page.locator("[data-compare]").click();
      await page.waitForURL(url(`/compare/${a}/${b}`));
      await page.locator('[data-state="plan"][data-path="both"]').waitFor();

      const parting = page.locator("[data-divergence]");
      expect(await parting.locator('[data-divergence-side="a"]').textContent()).toBe(
        `step ${diff.divergence?.a?.step} of A: plan: turn 1 · calls Edit`,
      );
      expect(await parting.locator('[data-divergence-side="b"]').textContent()).toBe(
        `step ${diff.divergence?.b?.step} of B: plan: turn 1 · calls Grep`,
      );
      expect(await page.locator('[data-state="plan"]').getAttribute("data-diverged")).toBe("true");
      for (const stage of ["execute", "test", "lint", "review"])
        expect(await page.locator(`[data-state="${stage}"]`).getAttribute("data-path")).toBe(
          "both",
        );
      expect(
        await page.locator('[data-state="code-review-parallel.done"]').getAttribute("data-path"),
      ).toBe("both");
      // Plan: three model calls in A, two in B; fewer tokens and less time in B.
      const plan = page.locator('[data-compare-stages] tr[data-stage="plan"]');
      const cells = await plan.locator("td").allTextContents();
      expect(cells.at(-2)).toBe("3");
      expect(cells.at(-1)).toBe("2");
      const planDiff = diff.stages.find((s) => s.stage === "plan");
      expect(await plan.locator('[data-delta="tokens"]').textContent()).toBe(
        `−${Math.abs(planDiff?.tokenDelta ?? 0)}`,
      );
      expect(await plan.locator('[data-delta="duration"]').textContent()).toMatch(/^−\d+ ms$/);
      await screenshot(page, "compare-runs");
      expect(offsite).toEqual([]);
      expect(consoleErrors).toEqual([]);
    });

    it("refuses to compare runs of two pipelines, saying so", async () => {
      const a = await run();
      const other = summaryOf(
        (
          await runCli(
            ...["run", "code-review", "--task", "rename auth to authentication"],
            ...["--root", project, "--store", storeOf(project), "--headless", "--json"],
          )
        ).stdout,
      ).runId;
      const { page, offsite, consoleErrors } = await watchedPage(browser);
      await page.goto(url(`/compare/${a}/${other}`));
      const refusal = page.locator("[data-compare-error]");
      await refusal.waitFor();
      expect(await refusal.textContent()).toBe(
        `Validation/ComparePipelinesDiffer: run ${a} is of pipeline code-review-parallel and run ${other} of code-review: only runs of the same pipeline compare`,
      );
      expect(await page.locator("[data-compare-stages]").count()).toBe(0);
      expect(offsite).toEqual([]);
      // The refusal's 400 is what the browser reports; nothing else.
      expect(consoleErrors.filter((e) => !e.includes("status of 400"))).toEqual([]);
    });
  },
);
