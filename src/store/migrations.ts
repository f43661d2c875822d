import type { Database } from "better-sqlite3";
import { err, ok, type Result } from "../errors.js";
import { VERSION } from "../version.js";
import { PRUNE_LOG_SCHEMA, STEPS_NO_DELETE } from "./sqlite-prune.js";
import { storeTooNew } from "./store-errors.js";

/** One step of the schema. Versions are 1, 2, 3… in order; a released migration never changes. */
export interface Migration {
  version: number;
  sql: string;
}

/** What of a step never changes once stored (migration 11; made again with the table, 17). */
const STEPS_APPEND_ONLY = `steps_events_no_update
        BEFORE UPDATE OF events, last_seq, journal, transcripts ON steps
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END`;

/** An audit row as an element of its step's `events` (migration 9); a damaged payload as text. */
const STORED_EVENT = `json_object('at', at, 'type', type, 'stageId', stage_id,
  'stageExecutionId', stage_execution_id, 'attempt', attempt,
  'payload', json(CASE WHEN json_valid(payload) THEN payload ELSE json_quote(payload) END))`;

/**
 * A stored transcript entry as JSON again; a damaged one as a JSON string of its text, which
 * never reads back as an entry (migration 11). A damaged journal value, which any JSON could be
 * taken for, is kept as `[key, null, text]` instead (see step-entries.ts).
 */
const JSON_TEXT = (column: string) =>
  `CASE WHEN json_valid(${column}) THEN ${column} ELSE json_quote(${column}) END`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        pipeline_id TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('running', 'suspended', 'done', 'failed', 'cancelled')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        stagechart_version TEXT NOT NULL,
        options TEXT NOT NULL,
        error TEXT,
        output TEXT
      );
      CREATE INDEX runs_by_creation ON runs (created_at);

      CREATE TABLE snapshots (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id),
        snapshot TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        stagechart_version TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );

      CREATE TABLE audit (
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        seq INTEGER NOT NULL CHECK (seq >= 1),
        at TEXT NOT NULL,
        type TEXT NOT NULL,
        stage_id TEXT,
        stage_execution_id TEXT,
        attempt INTEGER,
        payload TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
      CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;

      CREATE TABLE journal (
        key TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        value TEXT NOT NULL,
        recorded_at TEXT NOT NULL
      );

      CREATE TABLE transcripts (
        stage_execution_id TEXT NOT NULL,
        key TEXT NOT NULL,
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        entry TEXT NOT NULL,
        PRIMARY KEY (stage_execution_id, key)
      );

      CREATE TABLE leases (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id),
        owner TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Every committed step and the snapshot it led to, not only the latest.
    version: 2,
    sql: `
      CREATE TABLE steps (
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        step INTEGER NOT NULL CHECK (step >= 1),
        last_seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        snapshot TEXT,
        PRIMARY KEY (run_id, step)
      );
    `,
  },
  {
    // What pipelines keep between runs (the arena debate's ratings and past debates).
    version: 3,
    sql: `
      CREATE TABLE memory (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (namespace, key)
      );
      CREATE INDEX memory_by_update ON memory (namespace, updated_at);
    `,
  },
  {
    // What a fork at a step copies: the journal and transcript rows written up to that step,
    // marked by the highest rowid of each table when the step was committed.
    version: 4,
    sql: `
      ALTER TABLE steps ADD COLUMN journal_mark INTEGER;
      ALTER TABLE steps ADD COLUMN transcript_mark INTEGER;
    `,
  },
  {
    // Control events for a run another process owns, taken by that owner.
    version: 5,
    sql: `
      CREATE TABLE control_requests (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        event TEXT NOT NULL,
        requester TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'refused', 'expired')),
        error TEXT,
        settled_at TEXT
      );
      CREATE INDEX control_requests_pending ON control_requests (run_id, status);
    `,
  },
  {
    // Each snapshot is written once, in the step history, stamped there; the run's latest is its
    // last step with a snapshot. A run stored before step history gets one step holding it
    // (fewer bytes on disk).
    version: 6,
    sql: `
      ALTER TABLE steps ADD COLUMN definition_hash TEXT;
      ALTER TABLE steps ADD COLUMN stagechart_version TEXT;
      UPDATE steps SET
        definition_hash = (SELECT definition_hash FROM snapshots s WHERE s.run_id = steps.run_id),
        stagechart_version =
          (SELECT stagechart_version FROM snapshots s WHERE s.run_id = steps.run_id)
      WHERE snapshot IS NOT NULL
        AND step = (SELECT MAX(step) FROM steps latest
                    WHERE latest.run_id = steps.run_id AND latest.snapshot IS NOT NULL)
        AND snapshot = (SELECT snapshot FROM snapshots s WHERE s.run_id = steps.run_id);
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
    // Runs waiting for a worker (status `queued`), and the definitions they run, stored by their
    // hash so a worker needs no checkout. SQLite cannot change a CHECK in place: the
    // runs table is rebuilt with its rowids (the listing's tie-break), foreign keys off meanwhile.
    version: 7,
    sql: `
      CREATE TABLE runs_queued (
        run_id TEXT PRIMARY KEY,
        pipeline_id TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('queued', 'running', 'suspended', 'done', 'failed', 'cancelled')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        stagechart_version TEXT NOT NULL,
        options TEXT NOT NULL,
        error TEXT,
        output TEXT
      );
      INSERT INTO runs_queued (rowid, run_id, pipeline_id, status, created_at, updated_at,
          definition_hash, stagechart_version, options, error, output)
        SELECT rowid, run_id, pipeline_id, status, created_at, updated_at,
          definition_hash, stagechart_version, options, error, output FROM runs;
      DROP TABLE runs;
      ALTER TABLE runs_queued RENAME TO runs;
      CREATE INDEX runs_by_creation ON runs (created_at);
      CREATE INDEX runs_by_status ON runs (status, created_at);

      CREATE TABLE definitions (
        hash TEXT PRIMARY KEY,
        bundle TEXT NOT NULL,
        saved_at TEXT NOT NULL
      );
    `,
  },
  {
    // A tool's result is stored once, in the journal: the transcript entry carrying it names the
    // journal entry instead (fewer bytes on disk). Rows written before keep their results.
    version: 8,
    sql: "ALTER TABLE transcripts ADD COLUMN result_of TEXT;",
  },
  {
    // Fewer pages written per commit, so fewer bytes on disk. A step's audit events are stored
    // in its row (`events`, see records.ts) instead of a row each in `audit`, whose rows move
    // there; the steps keep the log append-only. A snapshot may be stored as a delta or patch,
    // `snapshot_base` naming the step of the keyframe it reads from (see snapshot-chain.ts). Rows
    // written before hold their JSON, as keyframes do.
    version: 9,
    sql: `
      ALTER TABLE steps ADD COLUMN snapshot_base INTEGER;
      ALTER TABLE steps ADD COLUMN events TEXT;
      UPDATE steps SET events = (
        SELECT json_group_array(${STORED_EVENT}) FROM (
          SELECT * FROM audit a
          WHERE a.run_id = steps.run_id AND a.seq <= steps.last_seq
            AND a.seq > (SELECT COALESCE(MAX(p.last_seq), 0) FROM steps p
                         WHERE p.run_id = steps.run_id AND p.step < steps.step)
          ORDER BY a.seq))
      WHERE last_seq > (SELECT COALESCE(MAX(p.last_seq), 0) FROM steps p
                        WHERE p.run_id = steps.run_id AND p.step < steps.step);
      INSERT INTO steps (run_id, step, last_seq, at, events)
        SELECT run_id, (SELECT COALESCE(MAX(step), 0) + 1 FROM steps t WHERE t.run_id = a.run_id),
          MAX(seq), MAX(at), json_group_array(${STORED_EVENT})
        FROM (SELECT * FROM audit ORDER BY run_id, seq) a
        WHERE seq > (SELECT COALESCE(MAX(last_seq), 0) FROM steps t WHERE t.run_id = a.run_id)
        GROUP BY run_id;
      DROP TABLE audit;
      CREATE TRIGGER steps_events_no_update BEFORE UPDATE OF events, last_seq ON steps
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
      CREATE TRIGGER steps_no_delete BEFORE DELETE ON steps
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    `,
  },
  {
    // A control request the run's owner is applying is `taken`: its requester can no longer
    // withdraw it, so the step applying it always stores. The table is rebuilt for its CHECK,
    // keeping ids (the queue's order); nothing refers to it.
    version: 10,
    sql: `
      CREATE TABLE control_requests_taken (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        event TEXT NOT NULL,
        requester TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('pending', 'taken', 'applied', 'refused', 'expired')),
        error TEXT,
        settled_at TEXT
      );
      INSERT INTO control_requests_taken SELECT id, run_id, event, requester, requested_at,
        expires_at, status, error, settled_at FROM control_requests;
      DROP TABLE control_requests;
      ALTER TABLE control_requests_taken RENAME TO control_requests;
      CREATE INDEX control_requests_pending ON control_requests (run_id, status);
    `,
  },
  {
    // Fewer bytes on disk: a commit wrote a row and an index entry in each of steps, journal and
    // transcripts. A step's journal and transcript entries are stored in its row (`journal`,
    // `transcripts`: JSON arrays, see step-entries.ts), and the tables go. Which step an entry
    // moves to: the first of its run whose marks cover its rowid (the marks were the tables'
    // highest rowids when the step was committed, and every entry was written before the step
    // that used it), so a fork at a step gets exactly what it got before. An entry no mark
    // covers (written after the run's last step, or by a run whose steps predate the marks)
    // goes to a new last step of its run, without events, so no earlier step takes it; steps
    // without marks stay ones a fork cannot start from, and so does that new step when none of
    // its run's steps has marks (it has no snapshot to start from either). The marks only say that from now on.
    version: 11,
    sql: `
      ALTER TABLE steps ADD COLUMN journal TEXT;
      ALTER TABLE steps ADD COLUMN transcripts TEXT;

      CREATE TEMP TABLE marked AS SELECT run_id, step, journal_mark, transcript_mark
        FROM main.steps WHERE journal_mark IS NOT NULL;
      CREATE INDEX temp.marked_journal ON marked (run_id, journal_mark, step);
      CREATE INDEX temp.marked_transcripts ON marked (run_id, transcript_mark, step);

      CREATE TEMP TABLE moved AS
        SELECT 'journal' AS kind, run_id, rowid AS position,
          (SELECT step FROM marked m WHERE m.run_id = j.run_id AND m.journal_mark >= j.rowid
           ORDER BY m.journal_mark, m.step LIMIT 1) AS step,
          CASE WHEN json_valid(value) THEN json_array(key, json(value))
            ELSE json_array(key, NULL, value) END AS entry
        FROM main.journal j
        UNION ALL
        SELECT 'transcripts', run_id, rowid,
          (SELECT step FROM marked m WHERE m.run_id = t.run_id AND m.transcript_mark >= t.rowid
           ORDER BY m.transcript_mark, m.step LIMIT 1),
          CASE WHEN result_of IS NULL
            THEN json_array(stage_execution_id, key, json(${JSON_TEXT("entry")}))
            ELSE json_array(stage_execution_id, key, json(${JSON_TEXT("entry")}), result_of) END
        FROM main.transcripts t;

      INSERT INTO main.steps (run_id, step, last_seq, at, journal_mark, transcript_mark)
        SELECT o.run_id, COALESCE(MAX(s.step), 0) + 1, COALESCE(MAX(s.last_seq), 0),
          MAX(COALESCE(MAX(s.at), ''), (SELECT updated_at FROM main.runs r WHERE r.run_id = o.run_id)),
          o.marks, o.marks
        FROM (SELECT DISTINCT run_id,
            CASE WHEN EXISTS (SELECT 1 FROM marked m WHERE m.run_id = moved.run_id) THEN 0 END
              AS marks
          FROM moved WHERE step IS NULL) o
          LEFT JOIN main.steps s ON s.run_id = o.run_id
        GROUP BY o.run_id;
      UPDATE moved SET step = (SELECT MAX(step) FROM main.steps s WHERE s.run_id = moved.run_id)
        WHERE step IS NULL;
      CREATE INDEX temp.moved_by_step ON moved (run_id, step, kind, position);

      UPDATE main.steps SET
        journal = (SELECT json_group_array(json(entry)) FROM (SELECT entry FROM moved m
          WHERE m.run_id = steps.run_id AND m.step = steps.step AND m.kind = 'journal'
          ORDER BY m.position)),
        transcripts = (SELECT json_group_array(json(entry)) FROM (SELECT entry FROM moved m
          WHERE m.run_id = steps.run_id AND m.step = steps.step AND m.kind = 'transcripts'
          ORDER BY m.position))
        WHERE EXISTS (SELECT 1 FROM moved m WHERE m.run_id = steps.run_id AND m.step = steps.step);
      UPDATE main.steps SET journal = NULL WHERE journal = '[]';
      UPDATE main.steps SET transcripts = NULL WHERE transcripts = '[]';

      DROP TABLE moved;
      DROP TABLE marked;
      DROP TABLE main.journal;
      DROP TABLE main.transcripts;
      DROP TRIGGER main.steps_events_no_update;
      CREATE TRIGGER main.${STEPS_APPEND_ONLY};
    `,
  },
  {
    // Listing 10,000 runs as fast as 10. The listing walks an index holding every
    // column it reads, in its order, instead of looking each run up in a table whose rows carry
    // their options. Its tie-break, the rowid, cannot be an index column, so the table is rebuilt
    // with the rowid named: `position` (as PostgreSQL's), each run keeping its own. run_id stays
    // unique, for the tables that refer to it.
    version: 12,
    sql: `
      CREATE TABLE runs_positioned (
        run_id TEXT NOT NULL UNIQUE,
        pipeline_id TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('queued', 'running', 'suspended', 'done', 'failed', 'cancelled')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        definition_hash TEXT NOT NULL,
        stagechart_version TEXT NOT NULL,
        options TEXT NOT NULL,
        error TEXT,
        output TEXT,
        position INTEGER PRIMARY KEY
      );
      INSERT INTO runs_positioned (position, run_id, pipeline_id, status, created_at, updated_at,
          definition_hash, stagechart_version, options, error, output)
        SELECT rowid, run_id, pipeline_id, status, created_at, updated_at,
          definition_hash, stagechart_version, options, error, output FROM runs;
      DROP TABLE runs;
      ALTER TABLE runs_positioned RENAME TO runs;
      CREATE INDEX runs_by_creation
        ON runs (created_at, position, status, pipeline_id, run_id, updated_at);
      CREATE INDEX runs_by_status
        ON runs (status, created_at, position, pipeline_id, run_id, updated_at);
    `,
  },
  {
    // The PostgreSQL store's migration 13 commits a step in one statement, a function of the
    // database, and stores its snapshots as this store does (deltas against a keyframe). This
    // store's tables already are as they should be: nothing changes.
    version: 13,
    sql: "SELECT 1",
  },
  {
    // Snapshots are stored as patches against the step before (snapshot-chain.ts), which a
    // stagechart from before would read as damaged: it refuses the file instead.
    version: 14,
    sql: "SELECT 1",
  },
  {
    // Retention: the prune log and the audit log's one exception (sqlite-prune.ts).
    version: 15,
    sql: PRUNE_LOG_SCHEMA,
  },
  {
    // A suspended run's earliest deadline, for a worker to take it then (run-queue.ts).
    version: 16,
    sql: `
      ALTER TABLE runs ADD COLUMN wake_at TEXT;
      CREATE INDEX runs_waking ON runs (wake_at) WHERE wake_at IS NOT NULL;
    `,
  },
  {
    // A step is keyed by its run's position and its number (step-keys.ts): the table's rowid,
    // so a commit writes no index of (run_id, step) besides the row, a WAL frame less a step.
    // The table is rebuilt; each step keeps its values, and the triggers are made again.
    version: 17,
    sql: `
      CREATE TABLE steps_keyed (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (run_id),
        step INTEGER NOT NULL CHECK (step >= 1),
        last_seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        snapshot TEXT,
        journal_mark INTEGER,
        transcript_mark INTEGER,
        definition_hash TEXT,
        stagechart_version TEXT,
        snapshot_base INTEGER,
        events TEXT,
        journal TEXT,
        transcripts TEXT,
        CHECK (id & 4294967295 = step)
      );
      INSERT INTO steps_keyed (id, run_id, step, last_seq, at, snapshot, journal_mark,
          transcript_mark, definition_hash, stagechart_version, snapshot_base, events, journal,
          transcripts)
        SELECT (r.position << 32) + s.step, s.run_id, s.step, s.last_seq, s.at, s.snapshot,
          s.journal_mark, s.transcript_mark, s.definition_hash, s.stagechart_version,
          s.snapshot_base, s.events, s.journal, s.transcripts
        FROM steps s JOIN runs r ON r.run_id = s.run_id
        ORDER BY r.position, s.step;
      DROP TABLE steps;
      ALTER TABLE steps_keyed RENAME TO steps;
      CREATE TRIGGER ${STEPS_APPEND_ONLY};
${STEPS_NO_DELETE}
    `,
  },
];

export const SCHEMA_VERSION: number = MIGRATIONS.at(-1)?.version ?? 0;

/**
 * Brings the database up to SCHEMA_VERSION. Check and apply share one IMMEDIATE transaction, so
 * two processes opening a fresh file at once cannot both apply the same migration. Foreign keys
 * are off while it runs (a migration may rebuild a table others refer to) and on after it.
 *
 * @internal Like everything that takes or holds better-sqlite3's objects, left out of the
 * package's declarations (tsconfig.build.json): an app type-checks them without the driver's
 * types (`@types/better-sqlite3` is a development dependency), and never calls this.
 */
export function migrate(db: Database, now: () => number): Result<void> {
  const apply = (): Result<void> => {
    db.exec(SCHEMA_VERSION_TABLE);
    const latest = db
      .prepare<[], { version: number; stagechartVersion: string }>(
        `SELECT version, stagechart_version AS stagechartVersion
         FROM schema_version ORDER BY version DESC LIMIT 1`,
      )
      .get();
    const found = latest?.version ?? 0;
    if (found > SCHEMA_VERSION) {
      return err(storeTooNew(found, SCHEMA_VERSION, latest?.stagechartVersion));
    }
    const record = db.prepare(
      "INSERT INTO schema_version (version, applied_at, stagechart_version) VALUES (?, ?, ?)",
    );
    const applied = new Set(
      db.prepare<[], number>("SELECT version FROM schema_version").pluck().all(),
    );
    // Every one not recorded yet, not only those above the latest: a file made between merges
    // of numbered migrations (8 and 10, then 9) still gets the one in the middle.
    for (const migration of MIGRATIONS.filter(({ version }) => !applied.has(version))) {
      db.exec(migration.sql);
      record.run(migration.version, new Date(now()).toISOString(), VERSION);
    }
    return ok(undefined);
  };
  db.pragma("foreign_keys = OFF");
  try {
    return db.transaction(apply).immediate();
  } finally {
    db.pragma("foreign_keys = ON");
  }
}

const SCHEMA_VERSION_TABLE = `CREATE TABLE IF NOT EXISTS schema_version (
  version INTEGER PRIMARY KEY,
  applied_at TEXT NOT NULL,
  stagechart_version TEXT NOT NULL
)`;
