import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { startInspectServer } from "../../src/inspect/server.js";
import {
  demoProject,
  REPO_ROOT,
  runCliOn,
  runPipelineIn,
  storeCommand,
  storeOf,
  summaryOf,
} from "../support/cli.js";
import { freePort, startInspect } from "../support/inspect-cli.js";

/**
 * Stands where an inspect server with a page open would: healthy, it takes the run's stream and
 * keeps the grant requests the run asks its page, and (when given a decision) answers them;
 * `hungUp` settles once it hung up on a request.
 */
async function serverWithPage(decision?: "approve" | "deny" | "hang up") {
  const asked: string[] = [];
  let hangingUp: () => void = () => {};
  const hungUp = new Promise<void>((resolve) => {
    hangingUp = resolve;
  });
  const server = createHttpServer((request, response) => {
    response.writeHead(request.url === "/api/v1/health" ? 200 : 404).end("{}");
  });
  new WebSocketServer({ server }).on("connection", (ws, request) => {
    if (request.url !== "/ws/interactor") return;
    ws.on("message", (data) => {
      const { request: grant } = JSON.parse(data.toString());
      if (!grant) return;
      asked.push(grant.proposalId);
      if (decision === "hang up") {
        ws.terminate();
        hangingUp();
      } else if (decision)
        ws.send(JSON.stringify({ type: "grant-answer", proposalId: grant.proposalId, decision }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { port: String(port), asked, hungUp, close: () => server.close() };
}

/**
 * A person at a terminal: what it was shown, and `typed` typed at its first grant prompt once
 * `when` settled (nothing is typed without `typed`).
 */
function personAtTerminal(typed?: string, when: Promise<unknown> = Promise.resolve()) {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = "";
  let toType = typed;
  output.on("data", (chunk: Buffer) => {
    shown += chunk.toString();
    if (toType === undefined || !shown.includes("Allow this call once?")) return;
    const text = toType;
    toType = undefined;
    void when.then(() => input.write(text));
  });
  return { terminal: { input, output }, shown: () => shown };
}

describe("stagechart inspect", () => {
  it("serves the store's runs on the port it is given, until Ctrl-C", async () => {
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review-parallel", "rename auth", "--json");
    const { runId } = summaryOf(run.stdout);
    const inspect = startInspect(runId, "--port", "0", "--store", storeOf(project));
    const page = await Promise.race([inspect.url, inspect.exit.then(() => "")]);
    expect(page).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/runs/${runId}$`));
    const origin = new URL(page).origin;
    const runs = (await (await fetch(`${origin}/api/v1/runs`)).json()) as Array<{ runId: string }>;
    expect(runs.map((r) => r.runId)).toEqual([runId]);
    process.emit("SIGINT");
    expect(await inspect.exit).toBe(0);
    await expect(fetch(`${origin}/api/v1/runs`)).rejects.toThrow();
  });

  it.each([
    ["a port that is not a number", ["--port", "forty"], "Validation/PortInvalid"],
    [
      "another host without a way to reach it safely",
      ["--host", "not-an-address.invalid", "--port", "0"],
      "ExtensionHost/InspectFailed",
    ],
  ])("refuses %s with a coded error and exit 1", async (_what, argv, code) => {
    const inspect = startInspect(...argv, "--store", storeOf(demoProject()));
    expect(await inspect.exit).toBe(1);
    expect(inspect.output().stderr).toContain(code);
    expect(inspect.output().stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });

  it("run --stately offline: one warning line on stderr, and the run finishes done as usual", async () => {
    const project = demoProject();
    const run = await runPipelineIn(
      project,
      "code-review-parallel",
      "rename auth",
      "--stately",
      "--json",
    );
    expect(run.code).toBe(0);
    expect(summaryOf(run.stdout).status).toBe("done");
    const warnings = run.stderr.split("\n").filter((line) => line.includes("--stately"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^stagechart: warning: --stately: .+; the run goes on without it$/);
  });

  it("run --inspect closes the server it started when the pipeline is refused, and names no page", async () => {
    const project = demoProject();
    const broken = join(project, "broken.yaml");
    writeFileSync(broken, "id: broken\nstages: [\n");
    const port = await freePort();
    const run = await runPipelineIn(project, broken, "t", "--inspect", String(port));
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain("inspect: http");
    await expect(fetch(`http://127.0.0.1:${port}/api/v1/health`)).rejects.toThrow();
  });

  it("run --inspect on a port whose server is too busy to answer the health check: the run streams to it", async () => {
    const received: string[] = [];
    // Never answers HTTP (as a server whose process is busy), but takes the run's stream.
    const server = createHttpServer(() => {});
    new WebSocketServer({ server }).on("connection", (ws) =>
      ws.on("message", (data) => received.push(data.toString())),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const run = await runPipelineIn(
        demoProject(),
        "code-review-parallel",
        "rename auth",
        "--headless",
        "--inspect",
        String(port),
        "--json",
      );
      expect(run.stderr).not.toContain("EADDRINUSE");
      expect(run.code).toBe(0);
      expect(summaryOf(run.stdout).status).toBe("done");
      expect(received.length).toBeGreaterThan(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("run --inspect to a server that drops its stream: one warning line, and the run finishes done", async () => {
    // Healthy (so the run streams to it rather than starting its own), but it drops every socket.
    const server = createHttpServer((request, response) => {
      response.writeHead(request.url === "/api/v1/health" ? 200 : 404).end("{}");
    });
    server.on("upgrade", (_request, socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const run = await runPipelineIn(
        demoProject(),
        "code-review-parallel",
        "rename auth",
        "--inspect",
        String(port),
        "--json",
      );
      expect(run.code).toBe(0);
      expect(summaryOf(run.stdout).status).toBe("done");
      const warnings = run.stderr.split("\n").filter((line) => line.includes("--inspect"));
      expect(warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            `^stagechart: warning: --inspect: the inspect server at 127\\.0\\.0\\.1:${port} .+; the run goes on without it$`,
          ),
        ),
      ]);
    } finally {
      server.close();
    }
  });
});

/**
 * code-review (whose plan asks for Edit, outside its envelope: a grant request) run with `flags`
 * and `--inspect` to a page server answering `decision`, with a person at a terminal when
 * `person` says what they type (and when): the summary, what the page was asked, what the
 * terminal showed, and the run's audit log.
 */
async function runBesidePage(
  decision: "approve" | "hang up" | undefined,
  person: { typed?: string; after?: "hang up" } | undefined,
  ...flags: string[]
) {
  const page = await serverWithPage(decision);
  const { terminal, shown } = personAtTerminal(
    person?.typed,
    person?.after === "hang up" ? page.hungUp : undefined,
  );
  try {
    const project = demoProject();
    const run = await runCliOn(
      person ? { terminal } : {},
      ...["run", "code-review", "--task", "rename auth", ...flags],
      ...["--root", project, "--store", storeOf(project), "--inspect", page.port, "--json"],
    );
    const summary = summaryOf(run.stdout);
    const audit = JSON.parse(
      (await storeCommand(project, "audit", summary.runId, "--json")).stdout,
    );
    return { code: run.code, summary, asked: page.asked, shown: shown(), audit };
  } finally {
    page.close();
  }
}

const editApproved = expect.objectContaining({
  type: "ToolApproved",
  payload: expect.objectContaining({ tool: "Edit", source: "grant" }),
});

describe("run --headless --inspect: nobody answers live, the --on-grant policy applies at once", () => {
  it("suspends with --on-grant suspend, without asking the page or the terminal", async () => {
    const { summary, asked, shown } = await runBesidePage(
      undefined,
      {},
      "--headless",
      "--on-grant",
      "suspend",
    );
    expect(summary.status).toBe("suspended");
    expect(asked).toEqual([]);
    expect(shown).toBe("");
  }, 30_000);

  it("denies by default, without asking the page, and the run goes on", async () => {
    const { code, summary, asked } = await runBesidePage(undefined, {}, "--headless");
    expect(code).toBe(0);
    expect(summary.status).toBe("done");
    expect(asked).toEqual([]);
  }, 30_000);

  it("without a terminal (and without --headless) the run is headless: the page is not asked", async () => {
    const { code, summary, asked } = await runBesidePage(
      undefined,
      undefined,
      "--on-grant",
      "suspend",
    );
    expect(code).toBe(3);
    expect(summary.status).toBe("suspended");
    expect(summary.waiting).toEqual([expect.objectContaining({ kind: "grant", tool: "Edit" })]);
    expect(asked).toEqual([]);
  }, 30_000);

  it("without a terminal, --wait-for-page makes the page the one who answers", async () => {
    const { code, summary, asked, audit } = await runBesidePage(
      "approve",
      undefined,
      "--wait-for-page",
    );
    expect(code).toBe(0);
    expect(summary.status).toBe("done");
    expect(asked).toHaveLength(1);
    expect(audit).toContainEqual(editApproved);
  }, 30_000);
});

describe("run --inspect on a terminal: the page answers beside the terminal", () => {
  it("the page is asked with the terminal and its answer is the run's (the prompt is withdrawn)", async () => {
    const { asked, shown, audit } = await runBesidePage("approve", {});
    expect(asked).toHaveLength(1);
    expect(shown).toContain("plan asks for Edit(src/auth.ts)");
    expect(audit).toContainEqual(editApproved);
  }, 30_000);

  it("a page server that goes away while asked leaves the question to the terminal", async () => {
    const { summary, asked, audit } = await runBesidePage("hang up", {
      typed: "y\n",
      after: "hang up",
    });
    expect(asked).toHaveLength(1);
    expect(summary.status).toBe("done");
    expect(audit).toContainEqual(editApproved);
  }, 30_000);
});

/**
 * `stagechart run code-review …argv` in a process of its own whose stdin is /dev/null (no
 * terminal), killed after 30 s: a run that waits for an answer fails rather than stalls.
 */
function runWithoutTerminal(project: string, ...argv: string[]) {
  const child = spawn(
    process.execPath,
    [
      ...[join(REPO_ROOT, "bin/stagechart.js"), "run", "code-review", "--task", "rename auth"],
      ...["--root", project, "--store", storeOf(project), "--json", ...argv],
    ],
    { stdio: ["ignore", "pipe", "pipe"], timeout: 30_000, killSignal: "SIGKILL" },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
}

describe("run --inspect with no terminal (stdin /dev/null): headless, and the run's page printed", () => {
  it("on a server it starts: a grant request suspends the run as --headless does (exit 3); resume names the same page", async () => {
    const project = demoProject();
    const port = await freePort();
    const run = await runWithoutTerminal(project, "--on-grant", "suspend", "--inspect", `${port}`);
    expect(run.code, run.stderr).toBe(3);
    const summary = summaryOf(run.stdout);
    expect(summary.status).toBe("suspended");
    expect(summary.waiting).toEqual([expect.objectContaining({ kind: "grant", tool: "Edit" })]);
    const page = `inspect: http://127.0.0.1:${port}/runs/${summary.runId}\n`;
    expect(run.stderr).toContain(page);
    const { proposalId } = summary.waiting[0];
    const resumed = await storeCommand(
      project,
      ...["resume", summary.runId, "--deny", proposalId, "--inspect", `${port}`, "--json"],
    );
    expect(summaryOf(resumed.stdout).status).toBe("done");
    expect(resumed.stderr).toContain(page);
  }, 40_000);

  it("on a server already running: the printed page is the one that server serves for the run", async () => {
    const project = demoProject();
    const server = await startInspectServer({ storePath: storeOf(project), port: 0 });
    try {
      const run = await runWithoutTerminal(project, "--inspect", `${server.port}`);
      expect(run.code, run.stderr).toBe(0);
      const { runId, status } = summaryOf(run.stdout);
      expect(status).toBe("done");
      const page = `http://127.0.0.1:${server.port}/runs/${runId}`;
      expect(run.stderr).toContain(`inspect: ${page}\n`);
      const served = await fetch(page);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toContain("text/html");
      expect((await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runId}`)).status).toBe(
        200,
      );
    } finally {
      await server.close();
    }
  }, 40_000);
});
