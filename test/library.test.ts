import { spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  resolveModelSpec,
  SqliteStore,
  startRun,
} from "../src/index.js";
import { demoProject, documentation, REPO_ROOT } from "./support/cli.js";

const ROOT = resolve(import.meta.dirname, "..");

describe("the package entry", () => {
  it("runs the README's library example: a stored run of the bundled pipeline, events and result", async () => {
    const project = demoProject();
    const model = await resolveModelSpec(
      `scripted:${join(ROOT, "machines/code-review.script.yaml")}`,
    );
    if (!model.ok) throw model.error;
    const pipeline = await loadPipelineFile(join(ROOT, "machines/code-review.yaml"));
    if (!pipeline.ok) throw new Error(pipeline.diagnostics.map((d) => d.message).join("\n"));
    const host = createHost({ model: model.value, audit: new MemoryAuditLog(), root: project });
    const store = SqliteStore.open(join(project, ".stagechart/runs.db"));
    if (!store.ok) throw store.error;
    const run = await startRun(pipeline.value, {
      host,
      store: store.value,
      task: "refactor auth module",
    });
    if (!run.ok) throw run.error;
    const seqs: number[] = [];
    for await (const event of run.value.events({ deltas: false })) seqs.push(event.seq);
    const { status, runId } = await run.value.result;
    expect(status).toBe("done");
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(store.value.getRun(runId)).toMatchObject({ ok: true, value: { status: "done" } });
    store.value.close();
  });
});

/** The documentation's code block after `<!-- marker -->`. */
function readmeExample(marker: string): string {
  const block = documentation()
    .split(`<!-- ${marker} -->`)[1]
    ?.match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error(`the README has no example marked ${marker}`);
  return block;
}

/**
 * A directory an app's developer might run the README's examples in: the package installed
 * (linked to this checkout, which `npm run build` built), the bundled pipelines beside it, and
 * a fresh copy of the demo project as `examples/auth-service`.
 */
function appDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-app-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(REPO_ROOT, join(dir, "node_modules/stagechart"), "dir");
  symlinkSync(join(REPO_ROOT, "machines"), join(dir, "machines"), "dir");
  symlinkSync(join(REPO_ROOT, "stages"), join(dir, "stages"), "dir");
  cpSync(demoProject(), join(dir, "examples/auth-service"), { recursive: true });
  return dir;
}

describe("the package's inspect server (needs npm run build)", () => {
  it("runs the README's examples: an app runs a pipeline, then serves the page over its store and streams its next run to it live", async () => {
    const dir = appDirectory();
    const app = [readmeExample("library-example"), readmeExample("library-inspect-example")];
    writeFileSync(join(dir, "app.mjs"), app.join("\n"));
    const child = spawn(process.execPath, ["app.mjs"], {
      cwd: dir,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    const printed = new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
        if (/^done$/m.test(stdout)) resolve();
      });
      child.once("exit", (code) => reject(new Error(`the app exited (${code}): ${stdout}`)));
    });
    try {
      await printed;
      const page = stdout.match(/^inspect: (http:\/\/127\.0\.0\.1:\d+)\/runs\/(\S+)$/m);
      if (!page) throw new Error(`no page printed: ${stdout}`);
      const [, origin, runId] = page;
      const api = async (path: string) => (await fetch(`${origin}${path}`)).json();
      await expect
        .poll(() => api("/api/v1/live"))
        .toEqual([expect.objectContaining({ runId, status: "done", closed: true })]);
      expect(await api(`/api/v1/runs/${runId}`)).toMatchObject({ runId, status: "done" });
      expect(await api(`/api/v1/runs/${runId}/graph`)).toMatchObject({ pipeline: { root: {} } });
    } finally {
      child.kill("SIGINT");
    }
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
  });
});

describe("the package's run control (needs npm run build)", () => {
  it("runs the docs' control example: an app approves the grant a parked run waits for, and the run ends done", async () => {
    const dir = appDirectory();
    const app = [readmeExample("library-example"), readmeExample("library-control-example")];
    writeFileSync(join(dir, "app.mjs"), app.join("\n"));
    const child = spawn(process.execPath, ["app.mjs"], {
      cwd: dir,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    const [code] = await once(child, "exit");
    expect(code, stdout).toBe(0);
    expect(stdout.trim().split("\n").at(-1)).toBe("done");
    const store = SqliteStore.open(join(dir, ".stagechart/runs.db"));
    if (!store.ok) throw store.error;
    const resumed = store.value
      .listRuns()
      .flatMap((run) => store.value.auditOf(run.runId))
      .find((event) => event.type === "RunResumed");
    expect(resumed?.payload).toMatchObject({ answers: [{ decision: "approve" }] });
    store.value.close();
  });
});

describe("the package's xstate", () => {
  it("is a peer dependency, so an app and stagechart share one copy (and the repo keeps it for itself)", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(manifest.dependencies.xstate).toBeUndefined();
    expect(manifest.peerDependencies.xstate).toMatch(/^\^5\./);
    expect(manifest.devDependencies.xstate).toBe(manifest.peerDependencies.xstate);
  });
});
