import type { PipelineEvent } from "../../compiler/pipeline-context.js";
import type { ErrorView } from "../../errors.js";
import type {
  ControlRequest,
  ControlSettlement,
  ControlStatus,
  Requester,
} from "../../runtime/live-control.js";
import { type ControlRow, controlNotTaken, fromControlRow } from "../control-requests.js";
import { runNotFound } from "../store-errors.js";
import { databaseNow, nowAt, type Query } from "./queries.js";

const COLUMNS = `id, run_id AS "runId", event, requester, requested_at AS "requestedAt",
  expires_at AS "expiresAt", status, error, settled_at AS "settledAt"`;

/**
 * The control queue's rows (migrations 5 and 10), read as the SQLite store reads them. BIGINT
 * columns come back from the driver as text, so they are made numbers again. Expiry is set and
 * compared on one clock, the database's (as leases are), whichever machine asks.
 */
export async function enqueueControl(
  query: Query,
  runId: string,
  {
    event,
    requester,
    timeoutMs,
  }: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  clock: number | undefined,
): Promise<ControlRequest> {
  const now = clock ?? (await databaseNow(query));
  const requestedAt = new Date(now).toISOString();
  const expiresAt = now + timeoutMs;
  const { rows } = await query(
    `INSERT INTO control_requests (run_id, event, requester, requested_at, expires_at, status)
     SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, 'pending'
     WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = $1::text)
     RETURNING id`,
    [runId, JSON.stringify(event), JSON.stringify(requester), requestedAt, expiresAt],
  );
  if (!rows[0]) throw runNotFound(runId);
  const id = Number(rows[0].id);
  return { id, runId, event, requester, requestedAt, expiresAt, status: "pending" };
}

/** Marks a request taken by the run's owner: see `ControlQueue.takeControl`. */
export async function takeControl(
  query: Query,
  id: number,
  clock: number | undefined,
): Promise<boolean> {
  const taken = await query(
    `UPDATE control_requests SET status = 'taken'
     WHERE id = $1 AND (status = 'taken' OR (status = 'pending' AND expires_at > ${nowAt("$2")}))`,
    [id, clock ?? null],
  );
  return taken.rowCount === 1;
}

export async function pendingControls(query: Query, runId: string): Promise<ControlRequest[]> {
  const { rows } = await query(
    `SELECT ${COLUMNS} FROM control_requests
     WHERE run_id = $1 AND status IN ('pending', 'taken') ORDER BY id`,
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

/** Settles (withdraws) a request still pending; false when taken or settled first. */
export async function settleControl(
  query: Query,
  id: number,
  outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  at: string,
): Promise<boolean> {
  return settleFrom(query, "pending", id, outcome, at);
}

/** Settles the taken requests a step applies or refuses, inside its transaction (`query`). */
export async function settleInStep(query: Query, settlements: ControlSettlement[], at: string) {
  for (const { id, ...outcome } of settlements)
    if (!(await settleFrom(query, "taken", id, outcome, at))) throw controlNotTaken(id);
}

async function settleFrom(
  query: Query,
  from: "pending" | "taken",
  id: number,
  outcome: { status: ControlStatus; error?: ErrorView },
  at: string,
): Promise<boolean> {
  const error = outcome.error ? JSON.stringify(outcome.error) : null;
  const settled = await query(
    `UPDATE control_requests SET status = $2, error = $3, settled_at = $4
     WHERE id = $1 AND status = $5`,
    [id, outcome.status, error, at, from],
  );
  return settled.rowCount === 1;
}

type PostgresControlRow = Omit<ControlRow, "id" | "expiresAt"> & { id: string; expiresAt: string };

const fromPostgresRow = (row: PostgresControlRow): ControlRequest =>
  fromControlRow({ ...row, id: Number(row.id), expiresAt: Number(row.expiresAt) });
