import type { PipelineEvent } from "../../compiler/pipeline-machine.js";
import type { ErrorView } from "../../errors.js";
import type {
  ControlRequest,
  ControlSettlement,
  ControlStatus,
  Requester,
} from "../../runtime/control.js";
import { type ControlRow, controlWithdrawn, fromControlRow } from "../control-requests.js";
import { runNotFound } from "../store-errors.js";
import type { Query } from "./step-writes.js";

const COLUMNS = `id, run_id AS "runId", event, requester, requested_at AS "requestedAt",
  expires_at AS "expiresAt", status, error, settled_at AS "settledAt"`;

/**
 * The control queue's rows (migration 5), read as the SQLite store reads them. BIGINT columns
 * come back from the driver as text, so they are made numbers again.
 */
export async function enqueueControl(
  query: Query,
  runId: string,
  request: { event: PipelineEvent; requester: Requester; expiresAt: number },
  at: string,
): Promise<ControlRequest> {
  const { rows } = await query(
    `INSERT INTO control_requests (run_id, event, requester, requested_at, expires_at, status)
     SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, 'pending'
     WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = $1::text)
     RETURNING id`,
    [
      runId,
      JSON.stringify(request.event),
      JSON.stringify(request.requester),
      at,
      request.expiresAt,
    ],
  );
  if (!rows[0]) throw runNotFound(runId);
  return { id: Number(rows[0].id), ...request, runId, requestedAt: at, status: "pending" };
}

export async function pendingControls(query: Query, runId: string): Promise<ControlRequest[]> {
  const { rows } = await query(
    `SELECT ${COLUMNS} FROM control_requests WHERE run_id = $1 AND status = 'pending' ORDER BY id`,
    [runId],
  );
  return rows.map(fromPostgresRow);
}

export async function controlRequest(
  query: Query,
  id: number,
): Promise<ControlRequest | undefined> {
  const { rows } = await query(`SELECT ${COLUMNS} FROM control_requests WHERE id = $1`, [id]);
  return rows[0] && fromPostgresRow(rows[0]);
}

/** Settles a request still pending; false when somebody settled it first. */
export async function settleControl(
  query: Query,
  id: number,
  outcome: { status: Exclude<ControlStatus, "pending">; error?: ErrorView },
  at: string,
): Promise<boolean> {
  const error = outcome.error ? JSON.stringify(outcome.error) : null;
  const settled = await query(
    `UPDATE control_requests SET status = $2, error = $3, settled_at = $4
     WHERE id = $1 AND status = 'pending'`,
    [id, outcome.status, error, at],
  );
  return settled.rowCount === 1;
}

/** Settles the requests a step applies or refuses, inside its transaction (`query`). */
export async function settleInStep(query: Query, settlements: ControlSettlement[], at: string) {
  for (const { id, ...outcome } of settlements)
    if (!(await settleControl(query, id, outcome, at))) throw controlWithdrawn(id);
}

export async function leaseHolder(
  query: Query,
  runId: string,
): Promise<{ owner: string; expiresAt: number } | undefined> {
  const { rows } = await query(
    `SELECT owner, expires_at AS "expiresAt" FROM leases WHERE run_id = $1`,
    [runId],
  );
  return rows[0] && { owner: rows[0].owner, expiresAt: Number(rows[0].expiresAt) };
}

type PostgresControlRow = Omit<ControlRow, "id" | "expiresAt"> & { id: string; expiresAt: string };

const fromPostgresRow = (row: PostgresControlRow): ControlRequest =>
  fromControlRow({ ...row, id: Number(row.id), expiresAt: Number(row.expiresAt) });
