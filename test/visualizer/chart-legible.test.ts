import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject, REPO_ROOT, runCli, storeOf, summaryOf } from "../support/cli.js";
import { releaseRoot } from "../support/pi-workflows.js";
import { launch, missingBrowser, watchedPage } from "./chromium.js";

const skip = missingBrowser();

/** The page's size the charts must be legible at. */
const SCREEN = { width: 1440, height: 900 };

/** With STAGECHART_SCREENSHOTS=<dir> (npm run screenshots), a picture of the chart for the docs. */
async function chartScreenshot(chart: Locator, name: string): Promise<void> {
  const dir = process.env.STAGECHART_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await chart.screenshot({ path: join(dir, `${name}.png`) });
}

interface Label {
  text: string;
  /** The size it is drawn at on the screen: its font size times the chart's scale. */
  px: number;
  box: { left: number; right: number; top: number; bottom: number };
}

/** What the tests read of an SVG element (this file is type-checked without the DOM's types). */
interface Drawn {
  getScreenCTM(): { a: number } | null;
}

interface DrawnPath {
  getTotalLength(): number;
  getPointAtLength(length: number): {
    matrixTransform(matrix: unknown): { x: number; y: number };
  };
  getScreenCTM(): unknown;
}

/** Every state's name and every edge's guard as drawn on the page. */
const labelsOf = (page: Page, selector: string): Promise<Label[]> =>
  page.locator(selector).evaluateAll((texts) =>
    texts.map((text) => {
      const { left, right, top, bottom } = text.getBoundingClientRect();
      const size = Number.parseFloat(
        text.ownerDocument.defaultView?.getComputedStyle(text).fontSize ?? "",
      );
      const scale = (text as unknown as Drawn).getScreenCTM()?.a ?? 0;
      return { text: text.textContent ?? "", px: size * scale, box: { left, right, top, bottom } };
    }),
  );

/** The pairs of labels whose boxes overlap (by more than half a pixel each way). */
function overlapping(labels: readonly Label[]): string[] {
  const found: string[] = [];
  labels.forEach((a, i) => {
    for (const b of labels.slice(i + 1)) {
      const across = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
      const down = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
      if (across > 0.5 && down > 0.5) found.push(`${a.text} / ${b.text}`);
    }
  });
  return found;
}

/** Where a state's box is on the screen. */
async function boxOf(page: Page, state: string) {
  const box = await page
    .locator(`.chart-viewport svg [data-state="${state}"] > .frame`)
    .boundingBox();
  if (!box) throw new Error(`${state} is not drawn`);
  return box;
}

/** The frame's stroke of a state, as the page paints it. */
const strokeOf = (page: Page, state: string): Promise<string> =>
  page
    .locator(`.chart-viewport svg [data-state="${state}"] > .frame`)
    .evaluate((frame) => frame.ownerDocument.defaultView?.getComputedStyle(frame).stroke ?? "");

describe.skipIf(skip)(`charts at Fit in Chromium${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let browser: Browser;
  let server: InspectServer;
  let project: string;
  const runs: Record<string, string> = {};
  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;

  /** Runs a pipeline in the project; its run id, once it ended with `code`. */
  async function ran(code: number, ...argv: string[]): Promise<string> {
    const run = await runCli(...argv, "--root", project, "--store", storeOf(project), "--json");
    expect(run.code, run.stderr).toBe(code);
    return summaryOf(run.stdout).runId as string;
  }

  beforeAll(async () => {
    project = demoProject();
    const workflows = releaseRoot();
    const task = ["--task", "rename auth to authentication", "--headless"];
    [browser, runs.task, runs.arena, runs.release, runs.cancelled, runs.suspended] =
      await Promise.all([
        launch(),
        // No one approves its test stage's `npm test`: the run fails there.
        ran(1, "run", "task-lifecycle", ...task),
        // Its sandbox's first task needs a grant, which nobody gives: the run fails there.
        ran(1, "run", "arena-debate", ...task),
        ran(0, "run", join(workflows, "release"), ...task),
        ran(
          3,
          ...["run", join(workflows, "release"), ...task],
          ...["--model", `scripted:${join(workflows, "release.cancel.script.yaml")}`],
        ),
        ran(3, "run", "code-review", ...task, "--on-grant", "suspend"),
      ]);
    server = await startInspectServer({ storePath: storeOf(project), port: 0 });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A run's page at 1440×900, its chart drawn and fitted. */
  async function atFit(runId: string) {
    const watched = await watchedPage(browser);
    await watched.page.setViewportSize(SCREEN);
    await watched.page.goto(url(`/runs/${runId}`));
    await watched.page.locator(".run-head .status[data-status]").waitFor();
    await watched.page
      .locator('.chart[data-zoom-level="fit"] .chart-viewport svg g.state')
      .first()
      .waitFor();
    return watched;
  }

  it.each([
    ["task-lifecycle", "task", 7],
    ["arena-debate", "arena", 19],
    ["the pi-workflows release", "release", 5],
  ] as const)(
    "draws %s whole at Fit, every stage's name at 11 px or more, no two labels overlapping",
    async (_, run, stages) => {
      const { page, offsite, consoleErrors } = await atFit(runs[run] as string);
      const names = await labelsOf(page, ".chart-viewport svg g.stage > text.label");
      expect(names).toHaveLength(stages);
      for (const label of names) expect(label.px, label.text).toBeGreaterThanOrEqual(11);
      const guards = await labelsOf(page, ".chart-viewport svg text.edge-label");
      const ends = await labelsOf(page, ".chart-viewport svg g.state-final > text.label");
      expect(overlapping([...names, ...guards, ...ends])).toEqual([]);
      // The whole chart in the viewport: nothing to scroll to.
      const viewport = page.locator(".chart-viewport");
      expect(await viewport.evaluate((v) => v.scrollWidth <= v.clientWidth)).toBe(true);
      expect(await viewport.evaluate((v) => v.scrollHeight <= v.clientHeight)).toBe(true);
      await chartScreenshot(
        page.locator(".chart"),
        `chart-${run === "task" ? "task-lifecycle" : run === "arena" ? "arena-debate" : "pi-release"}`,
      );
      expect(offsite).toEqual([]);
      expect(consoleErrors).toEqual([]);
      await page.close();
    },
  );

  it("marks each stage's way into failed instead of drawing it, and shows the route on hover and where the run failed", async () => {
    const { page } = await atFit(runs.task as string);
    const failed = "task-lifecycle.failed";
    // No edge is drawn for a stage failing or crashing: every stage carries a marker instead.
    const drawn = await page
      .locator(".chart-viewport svg g.edge > title")
      .evaluateAll((titles) => titles.map((t) => t.textContent));
    expect(drawn.filter((t) => /failed|crashed/.test(t ?? ""))).toEqual([]);
    const stages = await page.locator(".chart-viewport svg g.stage").count();
    expect(
      await page.locator(`.chart-viewport svg g.stage > .fails[data-fails="${failed}"]`).count(),
    ).toBe(stages);
    const route = (stage: string) =>
      page.locator(`.chart-viewport svg [data-state="${stage}"] .failure-edge`);
    const shown = (stage: string) =>
      route(stage).evaluate(
        (path) => path.ownerDocument.defaultView?.getComputedStyle(path).display !== "none",
      );
    expect(await shown("planning")).toBe(false);
    await page.locator('.chart-viewport svg [data-state="planning"] > .label').hover();
    expect(await shown("planning")).toBe(true);
    // The stage that failed the run shows its route without being hovered.
    await page.mouse.move(0, 0);
    expect(await shown("planning")).toBe(false);
    expect(await page.locator('[data-state="test"]').getAttribute("data-outcome")).toBe("fail");
    expect(await shown("test")).toBe(true);
    // A stage picked shows its route too, hovered or not.
    await page.locator('.chart-viewport svg [data-state="review"] > .label').click();
    await page.mouse.move(0, 0);
    expect(await page.locator('[data-state="review"]').getAttribute("data-selected")).toBe("true");
    expect(await shown("review")).toBe(true);
    // Its route ends at the failed state.
    const end = await route("test").evaluate((element) => {
      const path = element as unknown as DrawnPath;
      const screen = path
        .getPointAtLength(path.getTotalLength())
        .matrixTransform(path.getScreenCTM() ?? undefined);
      return { x: screen.x, y: screen.y };
    });
    const target = await boxOf(page, failed);
    expect(end.x).toBeGreaterThanOrEqual(target.x - 1);
    expect(end.x).toBeLessThanOrEqual(target.x + target.width + 1);
    expect(end.y).toBeGreaterThanOrEqual(target.y - 1);
    expect(end.y).toBeLessThanOrEqual(target.y + target.height + 1);
    await page.close();
  });

  it("writes a guard short on its edge and whole in the edge's tooltip", async () => {
    const { page } = await atFit(runs.task as string);
    const whole = 'output.decision equals "upstream-problem" and visits planning lt 5';
    const edge = page.locator(".chart-viewport svg g.edge").filter({
      has: page.locator("title", { hasText: whole }),
    });
    expect(await edge.count()).toBe(1);
    expect(await edge.locator("> title").textContent()).toBe(whole);
    const short = (await edge.locator(".edge-label").textContent()) ?? "";
    expect(short.endsWith("…")).toBe(true);
    expect(short.length).toBeLessThanOrEqual(22);
    expect(whole).toContain(short.slice(0, -1).replace("decision = ", "decision equals "));
    await page.close();
  });

  it.each([
    ["task", "task-lifecycle", "planning", "plan-review"],
    ["arena", "arena-debate", "verify-identity", "load-context"],
    ["release", "release", "build", "code-review"],
  ] as const)(
    "marks %s's entry and lays it out from there, in reading order",
    async (run, pipeline, entry, next) => {
      const { page } = await atFit(runs[run] as string);
      // The pipeline's entry, and each sub-pipeline's.
      const entries = page.locator('.chart-viewport svg [data-entry="true"]');
      expect(await entries.count()).toBeGreaterThanOrEqual(1);
      expect(await entries.first().getAttribute("data-state")).toBe(entry);
      const dot = await page
        .locator(`.chart-viewport svg g.initial[data-initial-of="${pipeline}.${entry}"]`)
        .boundingBox();
      const first = await boxOf(page, entry);
      const then = await boxOf(page, next);
      const done = await boxOf(page, `${pipeline}.done`);
      if (!dot) throw new Error("the entry is not marked");
      // Read top to bottom or left to right: the dot, the entry, what follows it, the end.
      const before = (a: typeof first, b: typeof first) =>
        a.y + a.height <= b.y + 0.5 || a.x + a.width <= b.x + 0.5;
      expect(before(dot, first)).toBe(true);
      expect(before(first, then)).toBe(true);
      expect(before(first, done)).toBe(true);
      await page.close();
    },
  );

  it("draws code, ask and sub-pipeline stages as what they are, and only LLM stages with a lifecycle", async () => {
    const arena = (await atFit(runs.arena as string)).page;
    const kindOf = async (page: Page, stage: string, chart = ".chart-viewport svg") => {
      const box = page.locator(`${chart} [data-state="${stage}"]`);
      return {
        kind: await box.getAttribute("data-kind"),
        badge: (await box.locator("> .badge text").allTextContents()).join(),
        pills: await box.locator("> .pill").count(),
        frame: await box.locator("> .frame").evaluate((f) => f.tagName),
        doubled: await box.locator("> .frame-inner").count(),
      };
    };
    expect(await kindOf(arena, "verify-identity")).toEqual({
      kind: "code",
      badge: "code",
      pills: 0,
      frame: "rect",
      doubled: 0,
    });
    expect(await kindOf(arena, "classify")).toEqual({
      kind: "llm",
      badge: "",
      pills: 6,
      frame: "rect",
      doubled: 0,
    });
    expect(await kindOf(arena, "sandbox")).toEqual({
      kind: "pipeline",
      badge: "pipeline",
      pills: 0,
      frame: "rect",
      doubled: 1,
    });
    await arena.close();
    const task = (await atFit(runs.task as string)).page;
    expect(await kindOf(task, "accept")).toEqual({
      kind: "ask",
      badge: "ask",
      pills: 0,
      frame: "path",
      doubled: 0,
    });
    await task.close();
    // A command stage, in the drawing `graph --format svg` prints (the page's own).
    const file = join(project, "kinds.yaml");
    writeFileSync(
      file,
      `id: kinds\ncontext: { type: object, properties: { task: { type: string } } }\nentry: build\nstages:\n  build: { run: "npm run build" }\n  plan: { file: ${join(REPO_ROOT, "stages/plan.md")} }\nnext:\n  build: plan\n  plan: done\n`,
    );
    const drawn = await runCli("graph", file, "--format", "svg");
    expect(drawn.code, drawn.stderr).toBe(0);
    const page = await browser.newPage({ viewport: SCREEN });
    await page.setContent(drawn.stdout);
    expect(await kindOf(page, "build", "svg")).toEqual({
      kind: "command",
      badge: "command",
      pills: 0,
      frame: "rect",
      doubled: 0,
    });
    await page.close();
  });

  it("colours where a run ended as what it means: done, failed, cancelled, suspended", async () => {
    const colourOf = async (run: string, state: string) => {
      const { page } = await atFit(runs[run] as string);
      await page.locator(`[data-state="${state}"][data-active="true"]`).waitFor();
      const stroke = await strokeOf(page, state);
      await page.close();
      return stroke;
    };
    const colours = {
      done: await colourOf("release", "release.done"),
      failed: await colourOf("task", "task-lifecycle.failed"),
      cancelled: await colourOf("cancelled", "release.cancelled"),
      suspended: await colourOf("suspended", "plan"),
    };
    expect(new Set(Object.values(colours)).size).toBe(4);
    expect(colours.done).toBe("rgb(43, 138, 62)");
    expect(colours.failed).toBe("rgb(201, 42, 42)");
    expect(colours.suspended).toBe("rgb(179, 92, 0)");
    // None of them the blue of a state a running run is in.
    expect(Object.values(colours)).not.toContain("rgb(59, 91, 219)");
  });
});
