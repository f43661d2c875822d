import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { pruneRuns } from "../../src/runtime/prune.js";
import { storeEndedRuns } from "./support/prunable-runs.js";
import { okValue, openStore, tempDir } from "./support/temp-store.js";

/** The file's pages in use and in all, in bytes, as another connection reads them. */
function pages(path: string): { used: number; file: number } {
  const db = new Database(path, { readonly: true });
  try {
    const size = db.pragma("page_size", { simple: true }) as number;
    const count = db.pragma("page_count", { simple: true }) as number;
    const free = db.pragma("freelist_count", { simple: true }) as number;
    return { used: (count - free) * size, file: count * size };
  } finally {
    db.close();
  }
}

describe("pruning the SQLite store", () => {
  it("frees the bytes it reports: pages no longer in use, which the file's later writes reuse", async () => {
    const path = join(tempDir(), "runs.db");
    const store = openStore(path);
    await storeEndedRuns(store, 30);
    const before = pages(path);
    const dry = okValue(await pruneRuns(store, { keep: 10, dryRun: true }));
    const report = okValue(await pruneRuns(store, { keep: 10 }));
    const after = pages(path);
    expect(report.runs).toHaveLength(20);
    expect(report.bytesFreed).toBe(before.used - after.used);
    expect(report.bytesFreed).toBeGreaterThan(20 * 5 * 1000);
    // The dry run's summed row sizes come within a fifth of the pages freed.
    expect(dry.bytesFreed / report.bytesFreed).toBeGreaterThan(0.8);
    expect(dry.bytesFreed / report.bytesFreed).toBeLessThan(1.2);
    // Without VACUUM the file keeps its size; its free pages take the next writes.
    expect(after.file).toBe(before.file);
    await storeEndedRuns(store, 5);
    expect(pages(path).file).toBe(before.file);
  });

  it("with vacuum gives the freed pages back: the file shrinks by at least what was freed", async () => {
    const path = join(tempDir(), "runs.db");
    const store = openStore(path);
    await storeEndedRuns(store, 30);
    const report = okValue(await pruneRuns(store, { keep: 5, vacuum: true }));
    expect(report.vacuumed).toBe(true);
    expect(report.storeBytes.before - report.storeBytes.after).toBeGreaterThanOrEqual(
      report.bytesFreed,
    );
    expect(pages(path).file).toBe(report.storeBytes.after);
    expect(store.listRuns()).toHaveLength(5);
  });
});
