import type Database from "better-sqlite3";
import type { JsonValue } from "../definitions/contract.js";
import type { MemoryEntry } from "../definitions/memory.js";
import { decodeRow } from "../runtime/stored-rows.js";
import * as z from "../zod.js";

interface MemoryRow {
  key: string;
  value: string;
  updatedAt: string;
}

const JSON_VALUE: z.ZodMiniType<JsonValue> = z.json();

/**
 * The `memory` table (migration 3): JSON values pipelines keep between runs, by namespace and
 * key. A row that does not read back as JSON is `Session/StoreCorrupt`, naming it.
 */
export class MemoryTable {
  private readonly upsert: Database.Statement<{
    namespace: string;
    key: string;
    value: string;
    at: string;
  }>;
  private readonly one: Database.Statement<[string, string], string>;
  private readonly latest: Database.Statement<[string, number], MemoryRow>;

  constructor(db: Database.Database) {
    this.upsert = db.prepare(
      `INSERT INTO memory (namespace, key, value, updated_at) VALUES (@namespace, @key, @value, @at)
       ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    );
    this.one = db
      .prepare<[string, string], string>("SELECT value FROM memory WHERE namespace = ? AND key = ?")
      .pluck();
    this.latest = db.prepare<[string, number], MemoryRow>(
      `SELECT key, value, updated_at AS updatedAt FROM memory WHERE namespace = ?
       ORDER BY updated_at DESC, rowid DESC LIMIT ?`,
    );
  }

  recall(namespace: string, key: string): JsonValue | undefined {
    const text = this.one.get(namespace, key);
    return text === undefined ? undefined : decode(namespace, key, text);
  }

  remember(namespace: string, key: string, value: JsonValue, at: string): void {
    this.upsert.run({ namespace, key, value: JSON.stringify(value), at });
  }

  recent(namespace: string, limit: number): MemoryEntry[] {
    return this.latest.all(namespace, limit).map((row) => ({
      key: row.key,
      value: decode(namespace, row.key, row.value),
      updatedAt: row.updatedAt,
    }));
  }
}

const decode = (namespace: string, key: string, text: string): JsonValue =>
  decodeRow(text, JSON_VALUE, `memory entry ${namespace}/${key}`, { namespace, key });
