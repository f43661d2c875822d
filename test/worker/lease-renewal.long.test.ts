import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import { demoProject } from "../support/cli.js";
import { DEMO_SERVER } from "../support/mcp.js";
import { executionProblems, until, workerPools } from "../support/worker-fleet.js";

// Its MCP server takes 12.5 s to start, by design: a long case, run under `npm run test:long`.
const stores = sharedStores();
const worker = workerPools();

describe.skipIf(noPostgres)("stagechart worker (runWorker) on a PostgreSQL store", () => {
  it("keeps a claimed run's lease renewed while it is prepared, however long that takes", async () => {
    const { url, store } = await stores.fresh();
    const project = demoProject();
    // An MCP server that takes 2.5 lease times to start: the worker starts it before the run. The
    // lease is long enough that a loaded machine's scheduling delays do not let it lapse.
    const slowServer = join(project, "slow-mcp-server.mjs");
    writeFileSync(
      slowServer,
      `await new Promise((later) => setTimeout(later, 12500));\nawait import(${JSON.stringify(DEMO_SERVER)});\n`,
    );
    const quiet = { stdout: () => {}, stderr: () => {} };
    const detached = await main(
      [
        ...["run", "code-review", "--task", "Add auth", "--detach", "--run-id", "slow-prepare"],
        ...["--root", project, "--store", url, "--mcp", `demo=${process.execPath} ${slowServer}`],
      ],
      quiet,
    );
    expect(detached).toBe(0);

    const { events } = worker({ store, leaseTtlMs: 5000, pollMs: 50 });
    // Once this worker has claimed the run, another asks for runs all along: it never gets it.
    // (Asking from the start raced this worker's first claim, and sometimes won it.)
    await until(async () => (await store.leaseHolder("slow-prepare")) !== undefined);
    const rival = await stores.reopen(url);
    const taken: string[] = [];
    await until(async () => {
      const claimed = await rival.claimRun("rival-worker", 5000);
      if (claimed) taken.push(claimed.runId);
      return claimed !== undefined || events.some((event) => event.kind === "finished");
    }, 100);

    expect({ taken, events }).toMatchObject({ taken: [] });
    expect(events.filter((event) => event.kind !== "warning")).toMatchObject([
      { kind: "started", runId: "slow-prepare" },
      { kind: "finished", runId: "slow-prepare", outcome: { status: "done" } },
    ]);
    expect(executionProblems(await store.auditOf("slow-prepare"))).toEqual([]);
  }, 60_000);
});
