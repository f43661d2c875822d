import type { JsonValue } from "./json.js";

/** One value a pipeline keeps between runs, with when it was last written. */
export interface MemoryEntry {
  key: string;
  value: JsonValue;
  updatedAt: string;
}

/** An answer given at once (an embedded store) or later (a shared one): await it either way. */
export type Awaitable<T> = T | Promise<T>;

/**
 * What a pipeline keeps from one run to the next (ratings, past decisions): JSON values by
 * namespace and key. A durable run's code stages reach the run store's, so it lasts as long as
 * the store; a run without a store gets one that lives in memory with its host. A shared store
 * (PostgreSQL) answers asynchronously, so code stages await every call.
 */
export interface PipelineMemory {
  recall(namespace: string, key: string): Awaitable<JsonValue | undefined>;
  /** Writes the value whole: writing a key again replaces it (so a repeated write is harmless). */
  remember(namespace: string, key: string, value: JsonValue): Awaitable<void>;
  /** The namespace's entries, the most recently written first, at most `limit`. */
  recent(namespace: string, limit: number): Awaitable<MemoryEntry[]>;
}
