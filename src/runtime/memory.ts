import type { JsonValue } from "../definitions/contract.js";
import type { MemoryEntry, PipelineMemory } from "../definitions/memory.js";

/** The memory of a host without a store: it lasts as long as the host. */
export class HostMemory implements PipelineMemory {
  private readonly entries = new Map<string, { namespace: string } & MemoryEntry>();

  constructor(private readonly clock: { now(): number } = { now: Date.now }) {}

  recall(namespace: string, key: string): JsonValue | undefined {
    const entry = this.entries.get(entryKey(namespace, key));
    return entry === undefined ? undefined : structuredClone(entry.value);
  }

  remember(namespace: string, key: string, value: JsonValue): void {
    const id = entryKey(namespace, key);
    // Deleted first, so the map's order is the order of the latest writes.
    this.entries.delete(id);
    const updatedAt = new Date(this.clock.now()).toISOString();
    this.entries.set(id, { namespace, key, value: structuredClone(value), updatedAt });
  }

  recent(namespace: string, limit: number): MemoryEntry[] {
    return [...this.entries.values()]
      .filter((entry) => entry.namespace === namespace)
      .reverse()
      .slice(0, limit)
      .map(({ key, value, updatedAt }) => ({ key, value: structuredClone(value), updatedAt }));
  }
}

const entryKey = (namespace: string, key: string) => JSON.stringify([namespace, key]);
