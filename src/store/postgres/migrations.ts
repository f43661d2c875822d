import type { PoolClient } from "pg";
import { err, ok, type Result } from "../../errors.js";
import { VERSION } from "../../version.js";
import type { Migration } from "../migrations.js";
import { storeTooNew } from "../store-errors.js";

/**
 * The PostgreSQL schema, version for version the same tables as the SQLite store's migrations
 * (src/store/migrations.ts): a migration added there needs its counterpart here, with the same
 * number. JSON stays in TEXT columns, as in SQLite, so a value reads back exactly as written and a
 * damaged one is told apart. Keys that are compared or ordered use the "C" collation: byte order,
 * as SQLite compares, whatever the database's locale. An identity `position` stands in for
 * SQLite's rowid where the order of insertion breaks ties.
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE runs (
        run_id TEXT COLLATE "C" PRIMARY KEY,
        pipeline_id TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('running', 'suspended', 'done', 'failed', 'cancelled')),
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        stagechart_version TEXT NOT NULL,
        options TEXT NOT NULL,
        error TEXT,
        output TEXT,
        position BIGINT GENERATED ALWAYS AS IDENTITY
      );
      CREATE INDEX runs_by_creation ON runs (created_at);

      CREATE TABLE snapshots (
        run_id TEXT COLLATE "C" PRIMARY KEY REFERENCES runs (run_id),
        snapshot TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        stagechart_version TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );

      CREATE TABLE audit (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
        seq INTEGER NOT NULL CHECK (seq >= 1),
        at TEXT NOT NULL,
        type TEXT NOT NULL,
        stage_id TEXT,
        stage_execution_id TEXT,
        attempt INTEGER,
        payload TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
      CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
        FOR EACH ROW EXECUTE FUNCTION audit_append_only();
      CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
        FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

      CREATE TABLE journal (
        key TEXT COLLATE "C" PRIMARY KEY,
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
        value TEXT NOT NULL,
        recorded_at TEXT NOT NULL
      );

      CREATE TABLE transcripts (
        stage_execution_id TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
        entry TEXT NOT NULL,
        PRIMARY KEY (stage_execution_id, key)
      );

      CREATE TABLE leases (
        run_id TEXT COLLATE "C" PRIMARY KEY REFERENCES runs (run_id),
        owner TEXT NOT NULL,
        expires_at BIGINT NOT NULL
      );
    `,
  },
  {
    version: 2,
    sql: `
      CREATE TABLE steps (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
        step INTEGER NOT NULL CHECK (step >= 1),
        last_seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        snapshot TEXT,
        PRIMARY KEY (run_id, step)
      );
    `,
  },
  {
    version: 3,
    sql: `
      CREATE TABLE memory (
        namespace TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL,
        position BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (namespace, key)
      );
      CREATE INDEX memory_by_update ON memory (namespace, updated_at);
    `,
  },
  {
    // What a fork copies: a step's marks bound the journal and transcript rows of its run
    // written up to it; positions (filled in for rows already there) stand in for rowids.
    version: 4,
    sql: `
      ALTER TABLE steps ADD COLUMN journal_mark BIGINT;
      ALTER TABLE steps ADD COLUMN transcript_mark BIGINT;
      ALTER TABLE journal ADD COLUMN position BIGINT GENERATED ALWAYS AS IDENTITY;
      ALTER TABLE transcripts ADD COLUMN position BIGINT GENERATED ALWAYS AS IDENTITY;
      CREATE INDEX journal_by_run ON journal (run_id, position);
      CREATE INDEX transcripts_by_run ON transcripts (run_id, position);
    `,
  },
  {
    // Control events for a run another process owns, taken by that owner.
    version: 5,
    sql: `
      CREATE TABLE control_requests (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
        event TEXT NOT NULL,
        requester TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'refused', 'expired')),
        error TEXT,
        settled_at TEXT
      );
      CREATE INDEX control_requests_pending ON control_requests (run_id, status);
    `,
  },
  {
    // Each snapshot is written once, in the step history, stamped there; the run's latest is its
    // last step with a snapshot. A run stored before step history gets one step holding it.
    version: 6,
    sql: `
      ALTER TABLE steps ADD COLUMN definition_hash TEXT;
      ALTER TABLE steps ADD COLUMN stagechart_version TEXT;
      UPDATE steps SET definition_hash = s.definition_hash,
          stagechart_version = s.stagechart_version
        FROM snapshots s
        WHERE s.run_id = steps.run_id AND steps.snapshot = s.snapshot
          AND steps.step = (SELECT MAX(step) FROM steps latest
                            WHERE latest.run_id = steps.run_id AND latest.snapshot IS NOT NULL);
      INSERT INTO steps (run_id, step, last_seq, at, snapshot, definition_hash, stagechart_version)
        SELECT s.run_id,
          (SELECT COALESCE(MAX(step), 0) + 1 FROM steps t WHERE t.run_id = s.run_id),
          (SELECT COALESCE(MAX(seq), 0) FROM audit a WHERE a.run_id = s.run_id),
          s.updated_at, s.snapshot, s.definition_hash, s.stagechart_version
        FROM snapshots s
        WHERE NOT EXISTS (SELECT 1 FROM steps t
                          WHERE t.run_id = s.run_id AND t.definition_hash IS NOT NULL);
      DROP TABLE snapshots;
    `,
  },
  {
    // Runs waiting for a worker (status `queued`), and the definitions they run, by hash.
    version: 7,
    sql: `
      ALTER TABLE runs DROP CONSTRAINT runs_status_check;
      ALTER TABLE runs ADD CONSTRAINT runs_status_check
        CHECK (status IN ('queued', 'running', 'suspended', 'done', 'failed', 'cancelled'));
      CREATE INDEX runs_by_status ON runs (status, created_at);

      CREATE TABLE definitions (
        hash TEXT COLLATE "C" PRIMARY KEY,
        bundle TEXT NOT NULL,
        saved_at TEXT NOT NULL
      );
    `,
  },
  {
    // A tool's result is stored once, in the journal: the transcript entry carrying it names the
    // journal entry instead. Rows written before keep their results.
    version: 8,
    sql: "ALTER TABLE transcripts ADD COLUMN result_of TEXT;",
  },
  {
    // As the SQLite store's: a step's audit events in its row, moved there from \`audit\`; the
    // steps keep the log append-only. \`snapshot_base\` is for snapshot deltas, stored here since
    // migration 13.
    version: 9,
    sql: `
      ALTER TABLE steps ADD COLUMN snapshot_base INTEGER;
      ALTER TABLE steps ADD COLUMN events TEXT;
      CREATE FUNCTION pg_temp.stored_payload(payload TEXT) RETURNS json LANGUAGE plpgsql AS $$
        BEGIN RETURN payload::json; EXCEPTION WHEN others THEN RETURN to_json(payload); END $$;
      CREATE TEMPORARY TABLE stored_events ON COMMIT DROP AS
        SELECT a.run_id, a.seq, a.at, json_build_object('at', a.at, 'type', a.type,
            'stageId', a.stage_id, 'stageExecutionId', a.stage_execution_id,
            'attempt', a.attempt, 'payload', pg_temp.stored_payload(a.payload)) AS event,
          (SELECT MIN(s.step) FROM steps s WHERE s.run_id = a.run_id AND s.last_seq >= a.seq)
            AS step
        FROM audit a;
      UPDATE steps SET events = e.events
        FROM (SELECT run_id, step, json_agg(event ORDER BY seq)::text AS events
              FROM stored_events WHERE step IS NOT NULL GROUP BY run_id, step) e
        WHERE e.run_id = steps.run_id AND e.step = steps.step;
      INSERT INTO steps (run_id, step, last_seq, at, events)
        SELECT run_id, (SELECT COALESCE(MAX(step), 0) + 1 FROM steps t WHERE t.run_id = e.run_id),
          MAX(seq), MAX(at), json_agg(event ORDER BY seq)::text
        FROM stored_events e WHERE step IS NULL GROUP BY run_id;
      DROP TABLE audit;
      CREATE TRIGGER steps_no_change BEFORE UPDATE OF events, last_seq OR DELETE ON steps
        FOR EACH ROW EXECUTE FUNCTION audit_append_only();
      CREATE TRIGGER steps_no_truncate BEFORE TRUNCATE ON steps
        FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
    `,
  },
  {
    // A control request the run's owner is applying is `taken`: its requester can no longer
    // withdraw it, so the step applying it always stores.
    version: 10,
    sql: `
      ALTER TABLE control_requests DROP CONSTRAINT control_requests_status_check;
      ALTER TABLE control_requests ADD CONSTRAINT control_requests_status_check
        CHECK (status IN ('pending', 'taken', 'applied', 'refused', 'expired'));
    `,
  },
  {
    // The SQLite store's migration 11 moves a step's journal and transcript entries into its row,
    // to write fewer 1 KiB pages per commit (fewer bytes on disk). PostgreSQL writes 8 KiB pages
    // and its own WAL records, not pages rewritten per commit, so the tables stay: nothing changes.
    version: 11,
    sql: "SELECT 1",
  },
  {
    // The SQLite store's migration 12 gives its listing covering indexes, ordered as it lists
    // (newest first, the later-inserted first among runs created in the same millisecond). Here
    // the indexes take the tie-break, `position`, so a page reads its rows and sorts none. They
    // include no other column: a step updates its run's updated_at (step-writes.ts), which an
    // index holding it would turn from a heap-only update into one written to every index of
    // runs; and a row is fetched from the heap by its tuple id, whatever the table's size.
    version: 12,
    sql: `
      DROP INDEX runs_by_creation;
      CREATE INDEX runs_by_creation ON runs (created_at, position);
      DROP INDEX runs_by_status;
      CREATE INDEX runs_by_status ON runs (status, created_at, position);
    `,
  },
  {
    // A step committed in one round trip: one call of this function, where a transaction of a
    // statement per table would wait on the network for each. It runs as one statement (all of
    // it or nothing), and each statement in it sees what other transactions committed before it
    // began, so the run's row lock taken first still makes commits of one run take turns, its
    // sequence gapless. A refusal is an error of its own SQLSTATE, turned back into the store's
    // error by the caller (step-writes.ts): SC001 no such run, SC002 the lease is not the
    // owner's, SC003 a control request no longer taken (its id the error's detail). Their
    // messages name no run or owner, which could hold words that read as a dropped connection
    // (postgres-errors.ts).
    // From here on a snapshot may be stored as in the SQLite store (snapshot-chain.ts), against
    // its run's keyframe: \`snapshot_base\` names the keyframe's step. This version makes an
    // older stagechart, which would read a delta as JSON, refuse the database instead.
    version: 13,
    sql: `
      CREATE FUNCTION stagechart_commit_step(
        p_run_id TEXT, p_owner TEXT, p_at TEXT, p_event_count INTEGER, p_events TEXT,
        p_snapshot TEXT, p_snapshot_base INTEGER, p_definition_hash TEXT, p_version TEXT,
        p_journal_keys TEXT[], p_journal_runs TEXT[], p_journal_values TEXT[],
        p_transcript_executions TEXT[], p_transcript_keys TEXT[], p_transcript_runs TEXT[],
        p_transcript_entries TEXT[], p_transcript_results TEXT[],
        p_control_ids BIGINT[], p_control_statuses TEXT[], p_control_errors TEXT[],
        OUT committed_step INTEGER, OUT committed_seq INTEGER)
      LANGUAGE plpgsql AS $$
      DECLARE
        run_hash TEXT;
        previous_step INTEGER;
        previous_seq INTEGER;
      BEGIN
        UPDATE runs SET updated_at = p_at WHERE run_id = p_run_id
          RETURNING definition_hash INTO run_hash;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'no such run' USING ERRCODE = 'SC001';
        END IF;
        -- Under a share lock: a takeover waits for this step, or this step sees it.
        IF p_owner IS NOT NULL THEN
          PERFORM FROM leases WHERE run_id = p_run_id AND owner = p_owner FOR SHARE;
          IF NOT FOUND THEN
            RAISE EXCEPTION 'the lease is not the owner''s' USING ERRCODE = 'SC002';
          END IF;
        END IF;
        SELECT step, last_seq INTO previous_step, previous_seq FROM steps
          WHERE run_id = p_run_id ORDER BY step DESC LIMIT 1;
        committed_step := COALESCE(previous_step, 0) + 1;
        committed_seq := COALESCE(previous_seq, 0) + p_event_count;

        -- Rows in the order given, so their positions follow it; a journal key already
        -- recorded keeps its first value.
        IF cardinality(p_journal_keys) > 0 THEN
          INSERT INTO journal (key, run_id, value, recorded_at)
            SELECT key, run_id, value, p_at
            FROM unnest(p_journal_keys, p_journal_runs, p_journal_values) WITH ORDINALITY
              AS given (key, run_id, value, n)
            ORDER BY n
            ON CONFLICT (key) DO NOTHING;
        END IF;
        IF cardinality(p_transcript_keys) > 0 THEN
          INSERT INTO transcripts (stage_execution_id, key, run_id, entry, result_of)
            SELECT stage_execution_id, key, run_id, entry, result_of
            FROM unnest(p_transcript_executions, p_transcript_keys, p_transcript_runs,
                p_transcript_entries, p_transcript_results) WITH ORDINALITY
              AS given (stage_execution_id, key, run_id, entry, result_of, n)
            ORDER BY n
            ON CONFLICT (stage_execution_id, key)
            DO UPDATE SET entry = excluded.entry, result_of = excluded.result_of;
        END IF;

        -- Marked with the highest journal and transcript positions of its run: what it had
        -- recorded by then (the run's row lock keeps its own writers in turn). Its snapshot is
        -- stamped with its definition hash (the run's, without one of its own) and version.
        INSERT INTO steps (run_id, step, last_seq, at, snapshot, snapshot_base, journal_mark,
            transcript_mark, definition_hash, stagechart_version, events)
          VALUES (p_run_id, committed_step, committed_seq, p_at, p_snapshot, p_snapshot_base,
            (SELECT COALESCE(MAX(position), 0) FROM journal WHERE run_id = p_run_id),
            (SELECT COALESCE(MAX(position), 0) FROM transcripts WHERE run_id = p_run_id),
            CASE WHEN p_snapshot IS NOT NULL THEN COALESCE(p_definition_hash, run_hash) END,
            p_version, p_events);

        -- The control requests the step applies or refuses: each must still be taken.
        FOR i IN 1 .. COALESCE(cardinality(p_control_ids), 0) LOOP
          UPDATE control_requests
            SET status = p_control_statuses[i], error = p_control_errors[i], settled_at = p_at
            WHERE id = p_control_ids[i] AND status = 'taken';
          IF NOT FOUND THEN
            RAISE EXCEPTION 'a control request is no longer taken'
              USING ERRCODE = 'SC003', DETAIL = p_control_ids[i]::text;
          END IF;
        END LOOP;
      END $$;
    `,
  },
  {
    // Snapshots are stored as patches against the step before (snapshot-chain.ts), which a
    // stagechart from before would read as damaged: it refuses the database instead. The tables
    // are as they should be.
    version: 14,
    sql: "SELECT 1",
  },
  {
    // Retention, as the SQLite store's migration 15: the prune log, append-only but for a
    // prune's one closing update, and the audit log's one exception — a step of an ended run an
    // unfinished prune recorded taking whole may be deleted.
    version: 15,
    sql: `
      CREATE TABLE prunes (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at TEXT NOT NULL,
        scope TEXT NOT NULL CHECK (scope IN ('runs', 'history')),
        criteria TEXT NOT NULL,
        requested_by TEXT NOT NULL,
        finished_at TEXT,
        runs INTEGER,
        bytes_freed BIGINT
      );
      CREATE TABLE pruned_runs (
        prune_id BIGINT NOT NULL REFERENCES prunes (id),
        run_id TEXT COLLATE "C" NOT NULL,
        pipeline_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        ended_at TEXT NOT NULL,
        steps INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        bytes BIGINT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (prune_id, run_id)
      );
      CREATE INDEX pruned_runs_by_run ON pruned_runs (run_id, created_at);

      CREATE FUNCTION prune_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the prune log is append-only'; END $$;
      CREATE FUNCTION prune_closed_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF OLD.finished_at IS NULL AND NEW.id = OLD.id AND NEW.at = OLD.at
            AND NEW.scope = OLD.scope AND NEW.criteria = OLD.criteria
            AND NEW.requested_by = OLD.requested_by THEN
            RETURN NEW;
          END IF;
          RAISE EXCEPTION 'the prune log is append-only';
        END $$;
      CREATE TRIGGER prunes_closed_once BEFORE UPDATE ON prunes
        FOR EACH ROW EXECUTE FUNCTION prune_closed_once();
      CREATE TRIGGER prunes_no_delete BEFORE DELETE ON prunes
        FOR EACH ROW EXECUTE FUNCTION prune_log_append_only();
      CREATE TRIGGER pruned_runs_no_change BEFORE UPDATE OR DELETE ON pruned_runs
        FOR EACH ROW EXECUTE FUNCTION prune_log_append_only();
      CREATE TRIGGER prunes_no_truncate BEFORE TRUNCATE ON prunes
        FOR EACH STATEMENT EXECUTE FUNCTION prune_log_append_only();
      CREATE TRIGGER pruned_runs_no_truncate BEFORE TRUNCATE ON pruned_runs
        FOR EACH STATEMENT EXECUTE FUNCTION prune_log_append_only();

      CREATE FUNCTION pruned_run_ended() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NOT EXISTS (SELECT 1 FROM runs WHERE run_id = NEW.run_id
              AND created_at = NEW.created_at AND status IN ('done', 'failed', 'cancelled')) THEN
            RAISE EXCEPTION 'only an ended run is pruned';
          END IF;
          RETURN NEW;
        END $$;
      CREATE TRIGGER pruned_runs_ended BEFORE INSERT ON pruned_runs
        FOR EACH ROW EXECUTE FUNCTION pruned_run_ended();

      CREATE FUNCTION steps_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM pruned_runs p
              JOIN prunes x ON x.id = p.prune_id AND x.scope = 'runs' AND x.finished_at IS NULL
              JOIN runs r ON r.run_id = p.run_id AND r.created_at = p.created_at
                AND r.status IN ('done', 'failed', 'cancelled')
              WHERE p.run_id = OLD.run_id) THEN
            RETURN OLD;
          END IF;
          RAISE EXCEPTION 'the audit log is append-only';
        END $$;
      DROP TRIGGER steps_no_change ON steps;
      CREATE TRIGGER steps_no_change BEFORE UPDATE OF events, last_seq OR DELETE ON steps
        FOR EACH ROW EXECUTE FUNCTION steps_append_only();
    `,
  },
  {
    // A suspended run's earliest deadline, for a worker to take it then, as the SQLite store's
    // migration 16.
    version: 16,
    sql: `
      ALTER TABLE runs ADD COLUMN wake_at TEXT COLLATE "C";
      CREATE INDEX runs_waking ON runs (wake_at) WHERE wake_at IS NOT NULL;
    `,
  },
  {
    // The SQLite store's migration 17 keys its steps by its table's rowid, dropping the index of
    // (run_id, step). A PostgreSQL table has no key of its own to use: its steps keep their
    // primary key, and nothing changes.
    version: 17,
    sql: "SELECT 1",
  },
];

export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS.at(-1)?.version ?? 0;

/** Any fixed number: the advisory lock that makes concurrent migrations take turns. */
const MIGRATION_LOCK = 0x5ca1ab1e;

/**
 * Brings the database up to POSTGRES_SCHEMA_VERSION, inside the caller's transaction. Workers
 * starting together take turns on an advisory lock, so no migration is applied twice; DDL is
 * transactional in PostgreSQL, so a failed migration leaves nothing behind.
 */
export async function migrate(client: PoolClient, now: () => number): Promise<Result<void>> {
  await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
  await client.query(`CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL,
    stagechart_version TEXT NOT NULL
  )`);
  const { rows } = await client.query<{ version: number; stagechartVersion: string }>(
    `SELECT version, stagechart_version AS "stagechartVersion"
     FROM schema_version ORDER BY version DESC LIMIT 1`,
  );
  const found = rows[0]?.version ?? 0;
  if (found > POSTGRES_SCHEMA_VERSION) {
    return err(storeTooNew(found, POSTGRES_SCHEMA_VERSION, rows[0]?.stagechartVersion));
  }
  const applied = await client.query<{ version: number }>("SELECT version FROM schema_version");
  const recorded = new Set(applied.rows.map(({ version }) => version));
  // Every one not recorded yet, as the SQLite store does (src/store/migrations.ts).
  for (const migration of POSTGRES_MIGRATIONS.filter(({ version }) => !recorded.has(version))) {
    await client.query(migration.sql);
    await client.query(
      "INSERT INTO schema_version (version, applied_at, stagechart_version) VALUES ($1, $2, $3)",
      [migration.version, new Date(now()).toISOString(), VERSION],
    );
  }
  return ok(undefined);
}
