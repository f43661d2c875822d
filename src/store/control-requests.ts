import type Database from "better-sqlite3";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { type ErrorView, StagechartError } from "../errors.js";
import type {
  ControlQueue,
  ControlRequest,
  ControlSettlement,
  ControlStatus,
  Requester,
} from "../runtime/live-control.js";

export interface ControlRow {
  id: number;
  runId: string;
  event: string;
  requester: string;
  requestedAt: string;
  expiresAt: number;
  status: ControlStatus;
  error: string | null;
  settledAt: string | null;
}

const COLUMNS = `id, run_id AS runId, event, requester, requested_at AS requestedAt,
  expires_at AS expiresAt, status, error, settled_at AS settledAt`;

/** The control queue's rows (migration 5). The store wraps each call in its error handling. */
export class ControlRequests implements Pick<ControlQueue, "pendingControls" | "controlRequest"> {
  private readonly insert: Database.Statement<
    Omit<ControlRow, "id" | "status" | "error" | "settledAt">
  >;
  private readonly pending: Database.Statement<[string], ControlRow>;
  private readonly one: Database.Statement<[number], ControlRow>;
  private readonly take: Database.Statement<{ id: number; now: number }>;
  /** Settles a request still in status `from`: `pending` (withdrawn) or `taken` (by a step). */
  private readonly settle: Database.Statement<{
    id: number;
    from: "pending" | "taken";
    status: ControlStatus;
    error: string | null;
    at: string;
  }>;

  constructor(db: Database.Database) {
    this.insert = db.prepare(
      `INSERT INTO control_requests (run_id, event, requester, requested_at, expires_at, status)
       VALUES (@runId, @event, @requester, @requestedAt, @expiresAt, 'pending')`,
    );
    this.pending = db.prepare(
      `SELECT ${COLUMNS} FROM control_requests
       WHERE run_id = ? AND status IN ('pending', 'taken') ORDER BY id`,
    );
    this.take = db.prepare(
      `UPDATE control_requests SET status = 'taken'
       WHERE id = @id AND (status = 'taken' OR (status = 'pending' AND expires_at > @now))`,
    );
    this.one = db.prepare(`SELECT ${COLUMNS} FROM control_requests WHERE id = ?`);
    this.settle = db.prepare(
      `UPDATE control_requests SET status = @status, error = @error, settled_at = @at
       WHERE id = @id AND status = @from`,
    );
  }

  /** Queues a request that expires `timeoutMs` after `now` (the store's clock). */
  enqueue(
    runId: string,
    {
      event,
      requester,
      timeoutMs,
    }: { event: PipelineEvent; requester: Requester; timeoutMs: number },
    now: number,
  ): ControlRequest {
    const requestedAt = new Date(now).toISOString();
    const expiresAt = now + timeoutMs;
    const row = {
      runId,
      event: JSON.stringify(event),
      requester: JSON.stringify(requester),
      requestedAt,
      expiresAt,
    };
    const id = Number(this.insert.run(row).lastInsertRowid);
    return { id, runId, event, requester, requestedAt, expiresAt, status: "pending" };
  }

  /** Marks a request taken by the run's owner: see `ControlQueue.takeControl`. */
  takeControl(id: number, now: number): boolean {
    return this.take.run({ id, now }).changes > 0;
  }

  pendingControls(runId: string): ControlRequest[] {
    return this.pending.all(runId).map(fromControlRow);
  }

  controlRequest(id: number): ControlRequest | undefined {
    const row = this.one.get(id);
    return row && fromControlRow(row);
  }

  /** Settles (withdraws) a request still pending; false when taken or settled first. */
  settleAt(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
    at: string,
  ): boolean {
    return this.settleFrom("pending", id, outcome, at);
  }

  /** Settles the taken requests a step applies or refuses, inside its transaction. */
  settleInStep(settlements: ControlSettlement[], at: string): void {
    for (const { id, ...outcome } of settlements)
      if (!this.settleFrom("taken", id, outcome, at)) throw controlNotTaken(id);
  }

  private settleFrom(
    from: "pending" | "taken",
    id: number,
    outcome: { status: ControlStatus; error?: ErrorView },
    at: string,
  ): boolean {
    const error = outcome.error ? JSON.stringify(outcome.error) : null;
    return this.settle.run({ id, from, status: outcome.status, error, at }).changes > 0;
  }
}

/**
 * A request a step settles that is not `taken`: only the owner moves a taken request on, so
 * another owner settled it (this one lost its lease).
 */
export const controlNotTaken = (id: number): StagechartError =>
  new StagechartError(
    "Session/LeaseLost",
    `control request ${id} is no longer taken by this owner: another owner of the run settled it; the step applying it is not stored`,
    { requestId: id },
  );

/** A row as a request; the PostgreSQL store reads its rows with it too. */
export function fromControlRow(row: ControlRow): ControlRequest {
  return {
    id: row.id,
    runId: row.runId,
    event: JSON.parse(row.event),
    requester: JSON.parse(row.requester),
    requestedAt: row.requestedAt,
    expiresAt: row.expiresAt,
    status: row.status,
    ...(row.error !== null && { error: JSON.parse(row.error) }),
    ...(row.settledAt !== null && { settledAt: row.settledAt }),
  };
}
