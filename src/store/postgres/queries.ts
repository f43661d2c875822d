import type pg from "pg";

/**
 * One statement on the store's pool, or on the connection of a transaction. A statement made at
 * every step is given a `name`: each connection then parses and plans it once, as a prepared
 * statement, and only binds and runs it after that.
 */
export type Query = (text: string, values?: unknown[], name?: string) => Promise<pg.QueryResult>;

/** A `Query` on `client` (a pool, or one of its connections). */
export const queryOn =
  (client: Pick<pg.Pool, "query">): Query =>
  (text, values, name) =>
    client.query(name === undefined ? { text, values } : { name, text, values });

/** The statements of the PostgreSQL store whose text is shared or long. */

export const RUN_COLUMNS = `run_id AS "runId", pipeline_id AS "pipelineId", status,
  created_at AS "createdAt", updated_at AS "updatedAt", definition_hash AS "definitionHash",
  stagechart_version AS "stagechartVersion", options, error, output, wake_at AS "wakeAt"`;

/** Newest first along the creation index, as summaries; all of them without a limit. */
export const LIST_RUNS = `SELECT run_id AS "runId", pipeline_id AS "pipelineId", status,
    created_at AS "createdAt", updated_at AS "updatedAt"
  FROM runs WHERE ($1::text IS NULL OR status = $1::text)
    AND ($3::text IS NULL OR updated_at COLLATE "C" > $3::text)
  ORDER BY created_at DESC, position DESC LIMIT $2::bigint`;

export const INSERT_RUN = `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at,
    definition_hash, stagechart_version, options, error, output, wake_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT (run_id) DO NOTHING`;

export const UPDATE_RUN = `UPDATE runs SET status = $2, updated_at = $3, definition_hash = $4,
    options = $5, error = $6, output = $7, wake_at = $8
  WHERE run_id = $1`;

export const UPSERT_MEMORY = `INSERT INTO memory (namespace, key, value, updated_at)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value,
    updated_at = excluded.updated_at`;

/** The database's own clock in epoch milliseconds, as an SQL expression. */
export const EPOCH_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/** Epoch ms on the clock in parameter `$n` when given (tests), else on the database's clock. */
export const nowAt = (param: string) => `COALESCE(${param}::bigint, ${EPOCH_MS})`;

/** The database's own clock in epoch milliseconds: one clock for leases on every machine. */
export const DATABASE_NOW = `SELECT ${EPOCH_MS} AS now`;

/** Now in epoch ms: `clock`'s when given (tests), else the database's. */
export async function databaseNow(query: Query, clock?: () => number): Promise<number> {
  return clock ? clock() : Number((await query(DATABASE_NOW)).rows[0].now);
}
