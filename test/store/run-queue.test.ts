import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openStore, storeFileAtSchema, tempDir } from "./support/temp-store.js";

/** A file as stagechart wrote it at schema version 6, before runs could be queued. */
function storeAtVersion6(path: string): void {
  const db = storeFileAtSchema(6, path);
  const insertRun = db.prepare(
    `INSERT INTO runs VALUES (?, 'plan-build', 'done', '2030-01-01T00:00:00.000Z',
       '2030-01-01T00:00:05.000Z', 'hash-run', '0.1.0', '{}', NULL, '{"ok":true}')`,
  );
  // Created in the same millisecond: the listing tells them apart by insertion order.
  for (const runId of ["run-b", "run-a"]) insertRun.run(runId);
  db.prepare(
    "INSERT INTO audit VALUES ('run-a', 1, '2030-01-01T00:00:01.000Z', 'RunStarted', NULL, NULL, NULL, '{}')",
  ).run();
  db.close();
}

describe("queued runs (migration 7)", () => {
  it("migrates a version-6 file: its runs, their order and what refers to them are kept", () => {
    const path = `${tempDir()}/runs.db`;
    storeAtVersion6(path);
    const store = openStore(path);
    expect(store.listRuns().map((run) => run.runId)).toEqual(["run-a", "run-b"]);
    expect(store.getRun("run-a")).toMatchObject({ ok: true, value: { output: { ok: true } } });
    expect(store.auditOf("run-a").map((event) => event.type)).toEqual(["RunStarted"]);
    const queued = store.enqueueRun({
      runId: "run-c",
      pipelineId: "plan-build",
      definitionHash: "hash-run",
      options: {},
    });
    expect(queued).toMatchObject({ ok: true, value: { status: "queued" } });
    store.close();
    // The other tables still refer to the rebuilt one: no step for a run that is not there.
    const db = new Database(path);
    db.pragma("foreign_keys = ON");
    const step = db.prepare(
      "INSERT INTO steps (id, run_id, step, last_seq, at) VALUES ((? << 32) + 9, ?, 9, 2, 'then')",
    );
    const position = db.prepare("SELECT position FROM runs WHERE run_id = ?").pluck();
    expect(() => step.run(999, "run-z")).toThrow(/FOREIGN KEY/);
    expect(() => step.run(position.get("run-a"), "run-a")).not.toThrow();
    db.close();
  });

  it("refuses a status outside the known ones, queued included", () => {
    const path = `${tempDir()}/runs.db`;
    openStore(path).close();
    const db = new Database(path);
    const insert = (status: string) =>
      db
        .prepare(
          `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
             stagechart_version, options) VALUES (?, 'p', ?, 'then', 'then', 'h', 'v', '{}')`,
        )
        .run(`run-${status}`, status);
    expect(() => insert("queued")).not.toThrow();
    expect(() => insert("paused")).toThrow(/CHECK/);
    db.close();
  });
});
