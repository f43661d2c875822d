import { writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { demoProject, runPipelineIn, storeCommand, storeOf, summaryOf } from "../support/cli.js";
import { freePort, startInspect } from "../support/inspect-cli.js";

/**
 * Stands where an inspect server with a page open would: healthy, it takes the run's stream and
 * keeps the grant requests the run asks its page, and (when given a decision) answers them.
 */
async function serverWithPage(decision?: "approve" | "deny" | "hang up") {
  const asked: string[] = [];
  const server = createHttpServer((request, response) => {
    response.writeHead(request.url === "/api/health" ? 200 : 404).end("{}");
  });
  new WebSocketServer({ server }).on("connection", (ws, request) => {
    if (request.url !== "/ws/interactor") return;
    ws.on("message", (data) => {
      const { request: grant } = JSON.parse(data.toString());
      if (!grant) return;
      asked.push(grant.proposalId);
      if (decision === "hang up") ws.terminate();
      else if (decision)
        ws.send(JSON.stringify({ type: "grant-answer", proposalId: grant.proposalId, decision }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { port: String(port), asked, close: () => server.close() };
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
    const runs = (await (await fetch(`${origin}/api/runs`)).json()) as Array<{ runId: string }>;
    expect(runs.map((r) => r.runId)).toEqual([runId]);
    process.emit("SIGINT");
    expect(await inspect.exit).toBe(0);
    await expect(fetch(`${origin}/api/runs`)).rejects.toThrow();
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

  it("run --inspect starts its server beside loading the pipeline, and closes it when the pipeline is refused", async () => {
    const project = demoProject();
    const broken = join(project, "broken.yaml");
    writeFileSync(broken, "id: broken\nstages: [\n");
    const port = await freePort();
    const run = await runPipelineIn(project, broken, "t", "--inspect", String(port));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`inspect: http://127.0.0.1:${port}`);
    await expect(fetch(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow();
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
      response.writeHead(request.url === "/api/health" ? 200 : 404).end("{}");
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
 * and `--inspect` to a page server answering `decision`: the summary, what the page was asked,
 * and the run's audit log.
 */
async function runBesidePage(decision: "approve" | "hang up" | undefined, ...flags: string[]) {
  const page = await serverWithPage(decision);
  try {
    const project = demoProject();
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename auth",
      ...flags,
      "--inspect",
      page.port,
      "--json",
    );
    const summary = summaryOf(run.stdout);
    const audit = JSON.parse(
      (await storeCommand(project, "audit", summary.runId, "--json")).stdout,
    );
    return { code: run.code, summary, asked: page.asked, audit };
  } finally {
    page.close();
  }
}

describe("run --headless --inspect: nobody answers live, the --on-grant policy applies at once", () => {
  it("suspends with --on-grant suspend, without asking the page", async () => {
    const { summary, asked } = await runBesidePage(
      undefined,
      "--headless",
      "--on-grant",
      "suspend",
    );
    expect(summary.status).toBe("suspended");
    expect(asked).toEqual([]);
  }, 30_000);

  it("denies by default, without asking the page, and the run goes on", async () => {
    const { code, summary, asked } = await runBesidePage(undefined, "--headless");
    expect(code).toBe(0);
    expect(summary.status).toBe("done");
    expect(asked).toEqual([]);
  }, 30_000);

  it("without --headless, the page is asked and its answer is the run's", async () => {
    const { asked, audit } = await runBesidePage("approve");
    expect(asked).toHaveLength(1);
    expect(audit).toContainEqual(
      expect.objectContaining({
        type: "ToolApproved",
        payload: expect.objectContaining({ tool: "Edit", source: "grant" }),
      }),
    );
  }, 30_000);

  it("without --headless, a page server that goes away while asked denies the call: the run does not wait", async () => {
    const { summary, asked, audit } = await runBesidePage("hang up");
    expect(asked).toHaveLength(1);
    expect(summary.status).toBe("done");
    expect(audit).toContainEqual(
      expect.objectContaining({
        type: "ToolDenied",
        payload: expect.objectContaining({ tool: "Edit" }),
      }),
    );
  }, 30_000);
});
