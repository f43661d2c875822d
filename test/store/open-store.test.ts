import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRun } from "../../src/runtime/run.js";
import { isPostgresUrl, openStore } from "../../src/store/open-store.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { CODE_REVIEW_SCRIPT } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { bundledCodeReview, noPostgres, sharedStores } from "./postgres/support/shared-store.js";

const shared = sharedStores();

describe("openStore: the one place a store spec picks a backend", () => {
  it("opens a SQLite file at a path, creating it", async () => {
    const file = join(tempDir(), "nested", "runs.db");
    const store = await openStore(file);
    if (!store.ok) throw store.error;
    expect(store.value).toBeInstanceOf(SqliteStore);
    expect(existsSync(file)).toBe(true);
    await store.value.close();
  });

  it("keeps a store in memory for :memory:, where a durable run goes as on a file and nothing is written", async () => {
    const cwd = tempDir();
    const before = process.cwd();
    process.chdir(cwd);
    try {
      const store = await openStore(":memory:");
      if (!store.ok) throw store.error;
      const h = harness(CODE_REVIEW_SCRIPT);
      const run = await startRun(await bundledCodeReview(), {
        host: h.host,
        store: store.value,
        runId: "in-memory",
        task: "t",
      });
      if (!run.ok) throw run.error;
      expect((await run.value.result).status).toBe("done");
      expect(await store.value.getRun("in-memory")).toMatchObject({
        ok: true,
        value: { status: "done" },
      });
      expect((await store.value.auditOf("in-memory")).at(-1)?.type).toBe("RunCompleted");
      await store.value.close();
      expect(readdirSync(cwd)).toEqual([]);
    } finally {
      process.chdir(before);
    }
  });

  it.skipIf(noPostgres)("opens the PostgreSQL store for a postgres:// URL", async () => {
    const { url } = await shared.fresh();
    expect(isPostgresUrl(url)).toBe(true);
    const store = await openStore(url);
    if (!store.ok) throw store.error;
    expect(store.value).toBeInstanceOf(PostgresStore);
    await store.value.close();
  });

  it("says a database it cannot reach is Session/StoreUnavailable, naming it without its password", async () => {
    const store = await openStore("postgresql://ana:s3cret@127.0.0.1:1/none", {
      postgres: { poolSize: 1 },
    });
    expect(store.ok).toBe(false);
    if (store.ok) return;
    expect(store.error.code).toBe("Session/StoreUnavailable");
    expect(store.error.message).not.toContain("s3cret");
  });
});
