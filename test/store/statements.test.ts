import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { RunSummary } from "../../src/runtime/run-records.js";
import { prepareStatements } from "../../src/store/statements.js";
import { openStore, storeFileAtSchema, tempDir, tempStore } from "./support/temp-store.js";

/** What SQLite says it does for a statement: one line of EXPLAIN QUERY PLAN per step. */
function planOf(db: Database.Database, statement: Database.Statement): string[] {
  return db
    .prepare<{ status: string | null; since: string | null; limit: number }, { detail: string }>(
      `EXPLAIN QUERY PLAN ${statement.source}`,
    )
    .all({ status: null, since: null, limit: 10 })
    .map(({ detail }) => detail);
}

/** The plans of a store file's two listings: every run, and the runs of one status. */
function listingPlans(path: string): string[][] {
  const db = new Database(path, { readonly: true });
  try {
    const { runs, runsOfStatus } = prepareStatements(db);
    return [planOf(db, runs), planOf(db, runsOfStatus)];
  } finally {
    db.close();
  }
}

/**
 * A page costs its rows whatever the store holds: the runs come out of an index that holds every
 * column the listing reads, in the listing's order, so no row of the runs table (each carrying
 * its options) is looked up and nothing is sorted; a run's last step is found in the range of
 * its steps' keys.
 */
function expectPageWalk(plan: string[], index: string): void {
  expect(plan.filter((line) => /\bruns\b/.test(line))).toEqual([
    expect.stringMatching(new RegExp(`^(SCAN|SEARCH) runs USING COVERING INDEX ${index}\\b`)),
  ]);
  expect(plan.filter((line) => /TEMP B-TREE/.test(line))).toEqual([]);
  for (const line of plan.filter((each) => /\bsteps\b/.test(each)))
    expect(line).toMatch(/^SEARCH steps USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/);
}

describe("the runs listing", () => {
  it("walks a covering index newest first: no lookup in the runs table, no sort", () => {
    const { store, path } = tempStore();
    store.close();
    const [all, ofStatus] = listingPlans(path);
    expectPageWalk(all ?? [], "runs_by_creation");
    expectPageWalk(ofStatus ?? [], "runs_by_status");
  });
});

const T = (seconds: number) => `2030-01-01T00:00:0${seconds}.000Z`;

/**
 * A store at schema 11, before the listing's covering indexes. w and x were created in the same
 * millisecond, and so were y and z: each pair is listed by insertion order, later first. y ended
 * at 2 s and a refused resume added a step at 5 s; z runs, last stepped at 3 s; x failed at 4 s
 * and never stepped; w is parked, last stepped at 1.5 s.
 */
function storeAtSchema11(): string {
  const path = join(tempDir(), "runs.db");
  const db = storeFileAtSchema(11, path);
  const run = db.prepare(
    `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
       stagechart_version, options) VALUES (?, 'plan-build', ?, ?, ?, 'hash-1', '0.1.0', ?)`,
  );
  const step = db.prepare("INSERT INTO steps (run_id, step, last_seq, at) VALUES (?, ?, 0, ?)");
  const options = JSON.stringify({ pipelineFile: "machines/plan-build.yaml" });
  run.run("run-z", "running", T(0), T(0), options);
  run.run("run-y", "done", T(0), T(2), options);
  run.run("run-x", "failed", T(1), T(4), options);
  run.run("run-w", "suspended", T(1), T(1), options);
  step.run("run-z", 1, T(1));
  step.run("run-z", 2, T(3));
  step.run("run-y", 1, T(1));
  step.run("run-y", 2, T(5));
  step.run("run-w", 1, "2030-01-01T00:00:01.500Z");
  db.close();
  return path;
}

const summary = (runId: string, status: string, createdAt: string, updatedAt: string) =>
  ({ runId, pipelineId: "plan-build", status, createdAt, updatedAt }) as RunSummary;

describe("the runs listing of a store made before it had covering indexes (migration 12)", () => {
  it("lists the same runs in the same order with the same updatedAt, and walks the new indexes", () => {
    const path = storeAtSchema11();
    const store = openStore(path);
    const w = summary("run-w", "suspended", T(1), "2030-01-01T00:00:01.500Z");
    const x = summary("run-x", "failed", T(1), T(4));
    const y = summary("run-y", "done", T(0), T(5));
    const z = summary("run-z", "running", T(0), T(3));
    expect(store.listRuns()).toEqual([w, x, y, z]);
    expect(store.listRuns({ limit: 3 })).toEqual([w, x, y]);
    expect(store.listRuns({ status: "running" })).toEqual([z]);
    expect(store.listRuns({ status: "failed", limit: 1 })).toEqual([x]);
    expect(store.listRuns({ updatedSince: T(3) })).toEqual([x, y]);
    expect(store.listRuns({ status: "done", updatedSince: T(4) })).toEqual([y]);
    store.close();

    const [all, ofStatus] = listingPlans(path);
    expectPageWalk(all ?? [], "runs_by_creation");
    expectPageWalk(ofStatus ?? [], "runs_by_status");
  });

  it("keeps each run's row, and what refers to it, through the rebuilt table", () => {
    const path = storeAtSchema11();
    const store = openStore(path);
    expect(store.getRun("run-y")).toMatchObject({
      ok: true,
      value: { status: "done", options: { pipelineFile: "machines/plan-build.yaml" } },
    });
    expect(
      store.createRun({ runId: "run-y", pipelineId: "p", definitionHash: "h", options: {} }),
    ).toMatchObject({ ok: false, error: { code: "Session/RunExists" } });
    store.close();
    const db = new Database(path);
    db.pragma("foreign_keys = ON");
    try {
      expect(db.pragma("foreign_key_check")).toEqual([]);
      const step = db.prepare(
        "INSERT INTO steps (id, run_id, step, last_seq, at) VALUES ((? << 32) + 9, ?, 9, 0, 't')",
      );
      const position = db.prepare("SELECT position FROM runs WHERE run_id = ?").pluck();
      expect(() => step.run(999, "run-nowhere")).toThrow(/FOREIGN KEY/);
      expect(() => step.run(position.get("run-x"), "run-x")).not.toThrow();
    } finally {
      db.close();
    }
  });

  it("lists a run created after the migration in the same millisecond as two kept runs first", () => {
    const store = openStore(storeAtSchema11(), { now: () => Date.parse(T(1)) });
    store.createRun({
      runId: "run-v",
      pipelineId: "plan-build",
      definitionHash: "hash-1",
      options: {},
    });
    expect(store.listRuns().map((run) => run.runId)).toEqual([
      "run-v",
      "run-w",
      "run-x",
      "run-y",
      "run-z",
    ]);
  });
});
