/**
 * An immutable map from stage id to a value, as the pipeline machine's context keeps what it
 * knows per stage (visits, results, model calls, what each stage received, a group's sibling
 * states).
 *
 * A context is never changed, only replaced, so a plain object with a key per stage is copied
 * whole each time one stage's entry changes: with thousands of stages that copy (V8 keeps such
 * objects as hash tables, slow to copy) was most of a run's time, and a run's cost grew with
 * the square of its stages. The table spreads its entries over a fixed number of buckets by a
 * hash of the stage id, so a change copies one bucket and the list of buckets: at 5,000 stages
 * about 80 entries, not 5,000.
 *
 * The buckets are held where nothing that walks the context looks: XState, persisting a
 * snapshot, walks every enumerable key of the context to find actor references in it
 * (`persistContext`), and with every finished stage's result in the tables that walk was a
 * durable run's cost per step, growing with its stages. A table has no enumerable keys; it is
 * written as its buckets (`toJSON`), so a stored snapshot holds the plain buckets, and a table
 * restored from one is that plain object until a change makes it a table again: every function
 * here takes either.
 */
export type StageTable<V> = Table<V> | Buckets<V>;

/** A table as JSON: bucket → stage id → value. */
type Buckets<V> = Readonly<Record<string, Readonly<Record<string, V>>>>;

class Table<V> {
  readonly #buckets: Buckets<V>;

  constructor(buckets: Buckets<V>) {
    this.#buckets = buckets;
  }

  get buckets(): Buckets<V> {
    return this.#buckets;
  }

  toJSON(): Buckets<V> {
    return this.#buckets;
  }
}

const bucketsOf = <V>(table: StageTable<V>): Buckets<V> =>
  table instanceof Table ? table.buckets : table;

/** Enough that a bucket stays small at 5,000 stages; few enough that copying the list is cheap. */
const BUCKETS = 64;

/** FNV-1a: the same bucket for a stage id in every process, so stored tables read back. */
function bucketOf(stageId: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < stageId.length; i++) {
    hash ^= stageId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return String((hash >>> 0) % BUCKETS);
}

export const EMPTY_TABLE: StageTable<never> = new Table<never>(Object.freeze({}));

/** The stage's entry. */
export function lookup<V>(table: StageTable<V>, stageId: string): V | undefined {
  const bucket = bucketsOf(table)[bucketOf(stageId)];
  return bucket !== undefined && Object.hasOwn(bucket, stageId) ? bucket[stageId] : undefined;
}

/** The table with the stage's entry set to `value`; the table itself is not changed. */
export function withEntry<V>(table: StageTable<V>, stageId: string, value: V): StageTable<V> {
  const key = bucketOf(stageId);
  const buckets = bucketsOf(table);
  return new Table({ ...buckets, [key]: { ...buckets[key], [stageId]: value } });
}

/** The table with each of `entries` set, copying each bucket they touch once. */
export function withEntries<V>(
  table: StageTable<V>,
  entries: Iterable<readonly [string, V]>,
): StageTable<V> {
  const buckets = bucketsOf(table);
  const copied: Record<string, Record<string, V>> = {};
  for (const [stageId, value] of entries) {
    const key = bucketOf(stageId);
    copied[key] ??= { ...buckets[key] };
    copied[key][stageId] = value;
  }
  return new Table({ ...buckets, ...copied });
}

/** Every entry, in no particular order. */
export function* entriesOf<V>(table: StageTable<V>): Generator<[string, V]> {
  for (const bucket of Object.values(bucketsOf(table)))
    for (const stageId in bucket) yield [stageId, bucket[stageId] as V];
}

/** The entries as one plain object, for what is shown or handed out (an O(stages) copy). */
export function recordOf<V>(table: StageTable<V>): Record<string, V> {
  return Object.fromEntries(entriesOf(table));
}

/** A table of a plain object's entries. */
export function tableOf<V>(record: Readonly<Record<string, V>>): StageTable<V> {
  return withEntries(EMPTY_TABLE as StageTable<V>, Object.entries(record));
}

/** A group's sibling state, as a stored snapshot holds one: a string (a table holds buckets). */
export const isSiblingState = (value: unknown): boolean => typeof value === "string";

/**
 * The entries of a per-stage field as a stored snapshot holds it: a table, or, in a snapshot
 * stored before tables, one plain object of entries, told apart by what an entry is (`isEntry`).
 */
export function storedEntries(
  stored: Readonly<Record<string, unknown>>,
  isEntry: (value: unknown) => boolean,
): [string, unknown][] {
  return Object.values(stored).some(isEntry)
    ? Object.entries(stored)
    : [...entriesOf(stored as StageTable<unknown>)];
}
