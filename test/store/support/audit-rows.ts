import { expect } from "vitest";
import type { AuditEvent } from "../../../src/events/audit.js";
import type { StepRecord } from "../../../src/runtime/run-records.js";

/**
 * A store at schema 8, when each audit event was a row of `audit`, as SQL both dialects run:
 * run-1 has events in its steps, a step without events, a damaged payload and an event after
 * its last step; run-2 (stored before step history) has an event and no step.
 */
export const AUDIT_ROWS_AT_SCHEMA_8 = [
  `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
     stagechart_version, options) VALUES
     ('run-1', 'plan-build', 'suspended', 'then', 'then', 'hash-1', '0.1.0', '{}'),
     ('run-2', 'plan-build', 'cancelled', 'then', 'then', 'hash-1', '0.1.0', '{}')`,
  `INSERT INTO audit (run_id, seq, at, type, stage_id, stage_execution_id, attempt, payload)
   VALUES ('run-1', 1, 't1', 'RunStarted', NULL, NULL, NULL, '{}'),
     ('run-1', 2, 't2', 'StageSetup', 'plan', 'run-1/plan/1', 1, '{"n":2}'),
     ('run-1', 3, 't3', 'StageExited', 'plan', 'run-1/plan/1', 1, 'not json'),
     ('run-1', 4, 't4', 'RunSuspended', NULL, NULL, NULL, '{"n":4}'),
     ('run-2', 1, 't1', 'RunCancelled', NULL, NULL, NULL, '{}')`,
  `INSERT INTO steps (run_id, step, last_seq, at, snapshot) VALUES
     ('run-1', 1, 1, 't1', '{"value":"plan"}'), ('run-1', 2, 1, 't2', NULL),
     ('run-1', 3, 3, 't3', '{"value":"plan"}')`,
];

/** What the store reads back from those rows once migrated (migration 9). */
export function expectMigratedAudit(
  run1: AuditEvent[],
  run2: AuditEvent[],
  steps: StepRecord[],
): void {
  expect(run1.map((event) => [event.seq, event.type, event.at])).toEqual([
    [1, "RunStarted", "t1"],
    [2, "StageSetup", "t2"],
    [3, "StageExited", "t3"],
    [4, "RunSuspended", "t4"],
  ]);
  expect(run1[1]).toEqual({
    seq: 2,
    at: "t2",
    type: "StageSetup",
    runId: "run-1",
    stageId: "plan",
    stageExecutionId: "run-1/plan/1",
    attempt: 1,
    payload: { n: 2 },
  });
  expect(run1[2]?.damaged).toBe("run run-1's audit event 3: its payload is not a JSON object");
  expect(run1[3]?.payload).toEqual({ n: 4 });
  expect(run2.map((event) => [event.seq, event.type])).toEqual([[1, "RunCancelled"]]);
  expect(steps.map((step) => [step.step, step.lastSeq])).toEqual([
    [1, 1],
    [2, 1],
    [3, 3],
    [4, 4],
  ]);
}
