import type { JsonValue } from "./contract.js";

/** One value a pipeline keeps between runs, with when it was last written. */
export interface MemoryEntry {
  key: string;
  value: JsonValue;
  updatedAt: string;
}

/**
 * What a pipeline keeps from one run to the next (ratings, past decisions): JSON values by
 * namespace and key. A durable run's code stages reach the run store's, so it lasts as long as
 * the store; a run without a store gets one that lives in memory with its host.
 */
export interface PipelineMemory {
  recall(namespace: string, key: string): JsonValue | undefined;
  /** Writes the value whole: writing a key again replaces it (so a repeated write is harmless). */
  remember(namespace: string, key: string, value: JsonValue): void;
  /** The namespace's entries, the most recently written first, at most `limit`. */
  recent(namespace: string, limit: number): MemoryEntry[];
}
