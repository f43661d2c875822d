import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { main } from "../../src/cli/main.js";
import { SqliteStore } from "../../src/index.js";
import { startInspectServer } from "../../src/inspect/server.js";
import { type Comparison, compare } from "../report.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const STAGES = ["gather", "draft", "check"];
const OPENS = 5;

/** A chain of three stages reading a file `turns - 1` times each, as files the CLI runs. */
function writePipeline(dir: string, turns: number): string {
  for (const id of STAGES)
    writeFileSync(
      join(dir, `${id}.md`),
      `---\nid: ${id}\nname: ${id}\nallowedTools: ["Read"]\ncompletionTool: finish\ncompletionSchema:\n  type: object\n  required: [summary]\n  properties: { summary: { type: string } }\nretryPolicy: { maxAttempts: 1, backoff: none }\nturnCap: ${turns + 1}\nresolutionPolicy: fail\n---\n\nRead notes.txt, then call finish. Task: {{ctx.task}}\n`,
    );
  const next = STAGES.slice(0, -1)
    .map((id, i) => `  ${id}: ${STAGES[i + 1]}`)
    .join("\n");
  const stages = STAGES.map((id) => `  ${id}: { file: ${id}.md }`).join("\n");
  writeFileSync(
    join(dir, "long.yaml"),
    `id: long\ncontext: { type: object, properties: { task: { type: string } } }\nentry: ${STAGES[0]}\nstages:\n${stages}\nnext:\n${next}\n`,
  );
  const reads = `    - tool: Read\n      args: { path: notes.txt }\n`.repeat(turns - 1);
  const script = STAGES.map(
    (id) => `  ${id}:\n${reads}    - tool: finish\n      args: { summary: "${id} done" }\n`,
  ).join("");
  writeFileSync(join(dir, "long.script.yaml"), `stages:\n${script}`);
  return join(dir, "long.yaml");
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** A stored run of the chain at `turns` model turns a stage, in a project of its own. */
async function storedChainRun(
  dir: string,
  turns: number,
): Promise<{ storePath: string; runId: string; events: number }> {
  const project = join(dir, `long-run-${turns}`);
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "notes.txt"), "The notes the stages read.\n");
  const storePath = join(project, "runs.db");
  let summary = "";
  const code = await main(
    [
      "run",
      writePipeline(project, turns),
      "--task",
      "read the notes",
      "--root",
      project,
      "--store",
      storePath,
      "--json",
    ],
    {
      stdout: (text) => {
        summary += text;
      },
      stderr: () => {},
    },
  );
  if (code !== 0) throw new Error(`the long run failed: ${summary}`);
  const runId = JSON.parse(summary.trim().split("\n").at(-1) as string).runId as string;
  const store = SqliteStore.open(storePath);
  if (!store.ok) throw store.error;
  const events = store.value.auditOf(runId).length;
  store.value.close();
  return { storePath, runId, events };
}

/** The repository's built page (the benchmarks run compiled elsewhere), if it is built. */
function builtPage(): string | undefined {
  const assets = join(process.cwd(), "dist", "visualizer");
  return existsSync(join(assets, "app.js")) ? assets : undefined;
}

const launchChromium = () =>
  chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }).catch(() => undefined);

/** Opens a run's page until its chart shows it done and its `events` timeline rows are there: ms. */
async function openPage(browser: Browser, base: string, runId: string, events: number) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  try {
    const start = performance.now();
    await page.goto(`${base}/runs/${runId}`);
    await page.locator('[data-state="long.done"][data-active="true"]').waitFor();
    await page.waitForFunction(`document.querySelectorAll("tr[data-seq]").length >= ${events}`);
    const opened = performance.now() - start;
    // Then the durations view, drawn when first shown.
    const shown = performance.now();
    await page.locator('[data-timeline-view="gantt"]').click();
    await page.locator("[data-bar]").first().waitFor();
    return { opened, durations: performance.now() - shown };
  } finally {
    await page.close();
  }
}

/**
 * How long a stored run of about `events` audit events takes to open: the four API reads the page
 * makes first, and the page itself in Chromium until its chart and every timeline row are drawn.
 * Reported, not asserted; undefined without Chromium or a built page.
 */
export async function storedRunOpening(
  dir: string,
  turns: number,
): Promise<Comparison | undefined> {
  const { storePath, runId, events } = await storedChainRun(dir, turns);
  const assets = builtPage();
  if (!assets) return undefined;
  const server = await startInspectServer({ storePath, port: 0, assets });
  const base = `http://127.0.0.1:${server.port}`;
  try {
    const apiTimes: number[] = [];
    for (let i = 0; i < OPENS; i++) {
      const start = performance.now();
      await Promise.all(
        ["", "/steps", "/graph", "/audit"].map(async (path) => {
          const reply = await fetch(`${base}/api/v1/runs/${runId}${path}`);
          if (!reply.ok) throw new Error(`GET ${path}: ${reply.status}`);
          await reply.json();
        }),
      );
      apiTimes.push(performance.now() - start);
    }
    const browser = await launchChromium();
    if (!browser) return undefined;
    const pageTimes: number[] = [];
    try {
      for (let i = 0; i < OPENS; i++)
        pageTimes.push((await openPage(browser, base, runId, events)).opened);
    } finally {
      await browser.close();
    }
    return compare(
      `open a stored run of ${events} audit events`,
      "ms",
      { label: "API: run, steps, graph, audit", value: median(apiTimes) },
      { label: "page in Chromium, chart and timeline drawn", value: median(pageTimes) },
      { auditEvents: events, opens: OPENS, slowestPageMs: Math.max(...pageTimes) },
    );
  } finally {
    await server.close();
  }
}

/**
 * Opening a stored run in Chromium as it grows: a run of about 1,000 audit events against one of
 * about 110 (`largeTurns` and `smallTurns` model turns a stage), the page until its chart and
 * every timeline row are drawn, the two opened in turn `rounds` times (the order swapped every
 * round), medians. The details hold the large run's time to show its durations view.
 */
export async function storedRunOpeningScale(
  dir: string,
  smallTurns: number,
  largeTurns: number,
  rounds = 7,
): Promise<Comparison | undefined> {
  const small = await storedChainRun(dir, smallTurns);
  const large = await storedChainRun(dir, largeTurns);
  const assets = builtPage();
  if (!assets) return undefined;
  const servers = await Promise.all(
    [small, large].map(({ storePath }) => startInspectServer({ storePath, port: 0, assets })),
  );
  const [smallBase, largeBase] = servers.map((s) => `http://127.0.0.1:${s.port}`);
  const browser = await launchChromium();
  try {
    if (!browser || !smallBase || !largeBase) return undefined;
    const open = (run: typeof small, base: string) =>
      openPage(browser, base, run.runId, run.events);
    // A first open of each warms the browser and the servers' chart caches.
    await open(small, smallBase);
    await open(large, largeBase);
    const smallTimes: number[] = [];
    const largeTimes: number[] = [];
    const durations: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ["small", "large"] : ["large", "small"];
      for (const which of order) {
        if (which === "small") smallTimes.push((await open(small, smallBase)).opened);
        else {
          const times = await open(large, largeBase);
          largeTimes.push(times.opened);
          durations.push(times.durations);
        }
      }
    }
    return compare(
      `open a stored run in Chromium, ${large.events} audit events against ${small.events}`,
      "ms",
      { label: `${small.events} events`, value: median(smallTimes) },
      { label: `${large.events} events`, value: median(largeTimes) },
      {
        smallEvents: small.events,
        largeEvents: large.events,
        rounds,
        slowestLargeMs: Math.max(...largeTimes),
        durationsViewMs: median(durations),
      },
    );
  } finally {
    await browser?.close();
    await Promise.all(servers.map((s) => s.close()));
  }
}
