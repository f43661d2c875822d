import { afterEach, describe, expect, it } from "vitest";
import { demoProject, runCli, summaryOf } from "../support/cli.js";
import { freePort, startInspect } from "../support/inspect-cli.js";
import { noPostgres, testPostgres } from "../support/postgres.js";

const postgres = testPostgres();
afterEach(() => {
  delete process.env.STAGECHART_STORE;
});

describe.skipIf(noPostgres)("stagechart inspect on a PostgreSQL store", () => {
  it("serves the runs stored there (--store or $STAGECHART_STORE), never showing the URL's password", async () => {
    const url = await postgres().createDatabase();
    const run = await runCli(
      ...["run", "code-review-parallel", "--task", "rename auth", "--json"],
      ...["--root", demoProject(), "--store", url],
    );
    const { runId } = summaryOf(run.stdout);
    for (const given of [["--store", url], []]) {
      if (given.length === 0) process.env.STAGECHART_STORE = url;
      const inspect = startInspect(runId, "--port", "0", ...given);
      const page = await Promise.race([inspect.url, inspect.exit.then(() => "")]);
      expect(inspect.all()).toMatch(/^stagechart inspect: http:\/\/127\.0\.0\.1:\d+\/runs\//);
      const origin = new URL(page).origin;
      const replies = await Promise.all(
        ["/api/v1/health", "/api/v1/runs", `/api/v1/runs/${runId}`, "/api/v1/runs/nope"].map(
          async (path) => (await fetch(`${origin}${path}`)).text(),
        ),
      );
      expect(JSON.parse(replies[1] as string)).toEqual([expect.objectContaining({ runId })]);
      expect(JSON.parse(replies[2] as string)).toMatchObject({ runId, status: "done" });
      process.emit("SIGINT");
      expect(await inspect.exit).toBe(0);
      for (const text of [...replies, inspect.all()])
        expect(text).not.toContain(postgres().password);
    }
  });

  it("a page's Approve resumes a suspended run on the shared store, in that store", async () => {
    const url = await postgres().createDatabase();
    const run = await runCli(
      ...["run", "code-review", "--task", "rename auth", "--json", "--root", demoProject()],
      ...["--store", url, "--headless", "--on-grant", "suspend"],
    );
    const { runId, status } = summaryOf(run.stdout);
    expect(status).toBe("suspended");
    const inspect = startInspect("--port", "0", "--store", url);
    const origin = new URL(await inspect.url).origin;
    const runOf = async () =>
      (await (await fetch(`${origin}/api/v1/runs/${runId}`)).json()) as {
        status: string;
        waiting?: { proposalId: string }[];
        timeline: { type: string }[];
      };
    const proposalId = (await runOf()).waiting?.[0]?.proposalId;
    const answered = await fetch(
      `${origin}/api/v1/runs/${runId}/grants/${encodeURIComponent(proposalId ?? "")}`,
      {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      },
    );
    expect(await answered.json()).toEqual({ answered: "resumed" });
    let resumed = await runOf();
    while (resumed.status === "suspended" || resumed.status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 50));
      resumed = await runOf();
    }
    expect(resumed.status).toBe("done");
    expect(resumed.timeline.map((event) => event.type)).toContain("ToolApproved");
    process.emit("SIGINT");
    expect(await inspect.exit).toBe(0);
    expect(inspect.all()).not.toContain(postgres().password);
  }, 30_000);

  it("refuses a database it cannot reach with a coded error naming it without its password", async () => {
    const url = await postgres().createDatabase();
    const wrong = url.replace(/@127\.0\.0\.1:\d+/, `@127.0.0.1:${await freePort()}`);
    const inspect = startInspect("--port", "0", "--store", wrong);
    expect(await inspect.exit).toBe(1);
    expect(inspect.all()).toContain("Session/StoreUnavailable");
    expect(inspect.all()).not.toContain(postgres().password);
  });

  it("run --inspect streams a run on the shared store to a server it starts for that store", async () => {
    const url = await postgres().createDatabase();
    const port = await freePort();
    const run = await runCli(
      ...["run", "code-review-parallel", "--task", "rename auth", "--json"],
      ...["--root", demoProject(), "--store", url, "--inspect", String(port), "--headless"],
    );
    expect(run.code).toBe(0);
    expect(summaryOf(run.stdout).status).toBe("done");
    expect(run.stderr).toContain(`inspect: http://127.0.0.1:${port}`);
    expect(`${run.stdout}${run.stderr}`).not.toContain(postgres().password);
  });
});
