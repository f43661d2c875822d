import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { tempDir } from "../support/stages.js";

/**
 * A map group killed with SIGKILL while its items run, and resumed in another process: the
 * items that had settled are not run again, the rest are. Runs the built package through
 * `crash-child.mjs` (`npm run build` first).
 */

const CHILD = resolve(import.meta.dirname, "../support/crash-child.mjs");
const FILES = ["a.ts", "b.ts", "c.ts", "d.ts", "e.ts", "f.ts"];

const stage = (id: string, tool: string, properties: string, body: string) => `---
id: ${id}
name: ${id}
allowedTools: ["Read"]
completionTool: ${tool}
completionSchema:
  type: object
  properties: ${properties}
retryPolicy: { maxAttempts: 1, backoff: none }
turnCap: 5
resolutionPolicy: fail
---
${body}
`;

function mapProject(): string {
  const dir = tempDir();
  writeFileSync(join(dir, "notes.md"), "what to look for\n");
  writeFileSync(
    join(dir, "plan.md"),
    stage(
      "plan",
      "submit_files",
      "{ files: { type: array, items: { type: string } } }",
      "List the files of {{ctx.task}}.",
    ),
  );
  writeFileSync(
    join(dir, "review-file.md"),
    stage(
      "review-file",
      "submit_review",
      "{ summary: { type: string } }",
      "Review {{ctx.file}} (item {{ctx.itemIndex}}).",
    ),
  );
  writeFileSync(
    join(dir, "summarize.md"),
    stage(
      "summarize",
      "submit_summary",
      "{ summary: { type: string } }",
      "Sum up {{ctx.upstream}}.",
    ),
  );
  writeFileSync(
    join(dir, "map.yaml"),
    `id: map-crash
context: { type: object, properties: { task: { type: string } } }
entry: plan
stages:
  plan: { file: plan.md }
  review-file: { file: review-file.md }
  summarize: { file: summarize.md }
next:
  plan:
    map: { over: output.files, stage: review-file, as: file }
    join: summarize
    maxConcurrency: 2
`,
  );
  writeFileSync(
    join(dir, "map.script.yaml"),
    `stages:
  plan:
    - { tool: submit_files, args: { files: ${JSON.stringify(FILES)} } }
  review-file:
    - { tool: Read, args: { path: notes.md }, delayMs: 150 }
    - { tool: submit_review, args: { summary: fine }, delayMs: 150 }
  summarize:
    - { tool: submit_summary, args: { summary: all fine } }
`,
  );
  return dir;
}

interface Life {
  code: number | null;
  lastSeq: number;
  result?: { status: string; results: Record<string, { output?: unknown }> };
}

/** Runs the child; with `killAfterExits`, SIGKILLs it once that many items have exited. */
function life(dir: string, mode: string, log: string, killAfterExits?: number): Promise<Life> {
  const args = [
    CHILD,
    mode,
    join(dir, "runs.db"),
    "map-1",
    join(dir, "map.yaml"),
    join(dir, "map.script.yaml"),
    dir,
    join(dir, log),
  ];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  const lived: Life = { code: null, lastSeq: 0 };
  let exits = 0;
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    if (line.startsWith("R ")) lived.result = JSON.parse(line.slice(2));
    if (!line.startsWith("E ")) return;
    const [, seq, type, stageId] = line.split(" ");
    lived.lastSeq = Number(seq);
    if (type === "StageExited" && stageId === "review-file") exits += 1;
    if (exits === killAfterExits) child.kill("SIGKILL");
  });
  child.stderr?.on("data", (chunk) => process.stderr.write(chunk));
  return new Promise((done) =>
    child.on("close", (code) => {
      lived.code = code;
      done(lived);
    }),
  );
}

const modelKeys = (dir: string, log: string): string[] => {
  try {
    return readFileSync(join(dir, log), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { key: string }).key);
  } catch {
    return [];
  }
};

describe("a map group killed while its items run", () => {
  it("resumes with only its unfinished items, and joins all of them in list order", async () => {
    const dir = mapProject();
    const first = await life(dir, "start", "models-1.log", 2);
    expect(first.code).toBeNull();
    const second = await life(dir, "resume", "models-2.log");
    expect(second.code, JSON.stringify(second.result)).toBe(0);
    expect(second.result?.status).toBe("done");

    const opened = SqliteStore.open(join(dir, "runs.db"));
    if (!opened.ok) throw opened.error;
    const events = opened.value.auditOf("map-1");
    opened.value.close();
    const exits = events.filter((e) => e.type === "StageExited" && e.stageId === "review-file");
    const item = (id: string | undefined) => /review-file\[(\d+)\]/.exec(id ?? "")?.[1];
    // Each item exited once, across both lives.
    expect(exits.map((e) => item(e.stageExecutionId)).sort()).toEqual([
      "0",
      "1",
      "2",
      "3",
      "4",
      "5",
    ]);
    const settledBefore = exits
      .filter((e) => e.seq <= first.lastSeq)
      .map((e) => item(e.stageExecutionId));
    expect(settledBefore.length).toBeGreaterThanOrEqual(2);
    const resumedCalls = new Set(modelKeys(dir, "models-2.log").map(item).filter(Boolean));
    // The items settled before the kill made no model call after it; the others all did.
    for (const index of settledBefore) expect(resumedCalls.has(index)).toBe(false);
    const unstarted = ["0", "1", "2", "3", "4", "5"].filter(
      (index) => !modelKeys(dir, "models-1.log").some((key) => item(key) === index),
    );
    expect(unstarted.length).toBeGreaterThan(0);
    for (const index of unstarted) expect(resumedCalls.has(index)).toBe(true);

    const results = second.result?.results ?? {};
    expect(FILES.map((_, i) => results[`review-file[${i}]`]?.output)).toEqual(
      FILES.map(() => ({ summary: "fine" })),
    );
    expect(results.summarize?.output).toEqual({ summary: "all fine" });
  }, 60_000);
});
