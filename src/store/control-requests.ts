import type Database from "better-sqlite3";
import type { PipelineEvent } from "../compiler/pipeline-machine.js";
import { type ErrorView, StagechartError } from "../errors.js";
import type {
  ControlQueue,
  ControlRequest,
  ControlSettlement,
  ControlStatus,
  Requester,
} from "../runtime/control.js";

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
  private readonly settle: Database.Statement<{
    id: number;
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
      `SELECT ${COLUMNS} FROM control_requests WHERE run_id = ? AND status = 'pending' ORDER BY id`,
    );
    this.one = db.prepare(`SELECT ${COLUMNS} FROM control_requests WHERE id = ?`);
    this.settle = db.prepare(
      `UPDATE control_requests SET status = @status, error = @error, settled_at = @at
       WHERE id = @id AND status = 'pending'`,
    );
  }

  enqueue(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; expiresAt: number },
    at: string,
  ): ControlRequest {
    const row = {
      runId,
      event: JSON.stringify(request.event),
      requester: JSON.stringify(request.requester),
      requestedAt: at,
      expiresAt: request.expiresAt,
    };
    const id = Number(this.insert.run(row).lastInsertRowid);
    return { id, ...request, runId, requestedAt: at, status: "pending" };
  }

  pendingControls(runId: string): ControlRequest[] {
    return this.pending.all(runId).map(fromControlRow);
  }

  controlRequest(id: number): ControlRequest | undefined {
    const row = this.one.get(id);
    return row && fromControlRow(row);
  }

  settleAt(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending">; error?: ErrorView },
    at: string,
  ): boolean {
    const error = outcome.error ? JSON.stringify(outcome.error) : null;
    return this.settle.run({ id, status: outcome.status, error, at }).changes > 0;
  }

  /** Settles the requests a step applies or refuses, inside its transaction. */
  settleInStep(settlements: ControlSettlement[], at: string): void {
    for (const { id, ...outcome } of settlements)
      if (!this.settleAt(id, outcome, at)) throw controlWithdrawn(id);
  }
}

/** A request a step settles that is no longer pending: its requester withdrew it meanwhile. */
export const controlWithdrawn = (id: number): StagechartError =>
  new StagechartError(
    "Session/ControlExpired",
    `control request ${id} was withdrawn by its requester before the step applying it was stored; that step is not stored`,
    { requestId: id, reason: "withdrawn" },
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
