import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { newRun, okValue, openStore, tempDir } from "./support/temp-store.js";

/**
 * Another process creating the file: its first write transaction (before WAL mode) held open
 * for `holdMs`, then committed. Resolves once the transaction is open, with the process's exit.
 */
async function creatingElsewhere(path: string, holdMs: number) {
  const script = `
    const Database = require("better-sqlite3");
    const db = new Database(${JSON.stringify(path)});
    db.exec("BEGIN IMMEDIATE");
    db.exec("CREATE TABLE elsewhere (a)");
    process.stdout.write("holding\\n");
    setTimeout(() => { db.exec("COMMIT"); db.close(); }, ${holdMs});`;
  const creator = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = once(creator, "exit");
  await once(creator.stdout, "data");
  return { exited };
}

describe("opening the store's file", () => {
  it("waits for another process that is still creating it, then opens it in WAL mode", async () => {
    const path = join(tempDir(), "runs.db");
    const { exited } = await creatingElsewhere(path, 300);

    const store = okValue(SqliteStore.open(path));
    store.createRun(newRun("run-1"));
    store.close();

    await exited;
    const again = openStore(path);
    expect(okValue(again.getRun("run-1")).runId).toBe("run-1");
    expect(Reflect.get(again, "db").pragma("journal_mode", { simple: true })).toBe("wal");
  });
});
