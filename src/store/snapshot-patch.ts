/**
 * The difference between two snapshots of a run as a list of operations, and its application.
 *
 * A step's snapshot shares most of its objects with the step before: XState and the pipeline's
 * actions never change an object in place, they make a new one along the path that changed
 * (a stage table changes one bucket). So two snapshots are compared by identity first: a value
 * that is the same object in both is the same JSON and is not looked into. Comparing costs what
 * changed, not the size of the snapshot, and so does the patch.
 *
 * What is compared is what `JSON.stringify` would write: a key whose value is `undefined`, a
 * function or a symbol is absent; an object with `toJSON` (a `Date`) is compared as a whole.
 */

/** A key of an object or an index of an array. */
export type PathKey = string | number;

/** `[path, value]` sets the value at the path; `[path]` deletes the key there. */
export type PatchOp = [path: PathKey[], value: unknown] | [path: PathKey[]];

/** The operations that make `after` of `before`, as JSON would see both. */
export function diffSnapshots(before: unknown, after: unknown): PatchOp[] {
  const ops: PatchOp[] = [];
  diffInto(before, after, [], ops);
  return ops;
}

/**
 * `path` is where the walk is: one array for the whole walk, a key pushed on the way down and
 * popped on the way back, copied into an operation only (most of what is walked is unchanged).
 */
function diffInto(was: unknown, is: unknown, path: PathKey[], ops: PatchOp[]): void {
  if (was === is) return;
  // Compared as JSON writes them: a stage table is written as its buckets, whose identity
  // tells what changed as any plain record's does.
  const before = asWritten(was);
  const after = asWritten(is);
  if (before === after) return;
  if (Array.isArray(before) && Array.isArray(after)) diffArrays(before, after, path, ops);
  else if (isPlainRecord(before) && isPlainRecord(after)) diffRecords(before, after, path, ops);
  else if (!sameLeaf(before, after)) ops.push([path.slice(), after]);
}

/** The difference at `key` under `path`. */
function diffAt(before: unknown, after: unknown, path: PathKey[], key: PathKey, ops: PatchOp[]) {
  path.push(key);
  diffInto(before, after, path, ops);
  path.pop();
}

const at = (path: PathKey[], key: PathKey): PathKey[] => [...path, key];

/**
 * Key by key, when the keys `before` and `after` share are in the same order and the new ones
 * come after them (as spreading a record and setting a key makes it); a record whose keys moved
 * is set whole, so that the patched record has the order `after` has. Integer keys ("0", "12")
 * are left out of that: a record lists them first, in ascending order, whatever order they were
 * set in (a stage table's buckets are such keys).
 */
function diffRecords(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: PathKey[],
  ops: PatchOp[],
): void {
  const beforeKeys = Object.keys(before);
  const afterKeys = Object.keys(after);
  const start = ops.length;
  if (sameKeys(beforeKeys, afterKeys) && sameValuesOf(before, after, afterKeys, path, ops)) return;
  ops.length = start;
  const kept = (key: string) =>
    isWritten(before[key]) && Object.hasOwn(after, key) && isWritten(after[key]);
  const orderedKept = (key: string) => !isIntegerKey(key) && kept(key);
  let next = 0;
  let added = false;
  for (const key of afterKeys) {
    const value = after[key];
    if (!isWritten(value)) continue;
    const ordered = !isIntegerKey(key);
    if (!Object.hasOwn(before, key) || !isWritten(before[key])) {
      if (ordered) added = true;
      ops.push([at(path, key), value]);
      continue;
    }
    if (!ordered) {
      if (before[key] !== value) diffAt(before[key], value, path, key, ops);
      continue;
    }
    while (next < beforeKeys.length && !orderedKept(beforeKeys[next] as string)) next++;
    if (added || beforeKeys[next] !== key) {
      ops.length = start;
      ops.push([path.slice(), after]);
      return;
    }
    next++;
    if (before[key] !== value) diffAt(before[key], value, path, key, ops);
  }
  for (const key of beforeKeys) if (isWritten(before[key]) && !kept(key)) ops.push([at(path, key)]);
}

/**
 * An array that grew keeps its elements: those that changed and those added are set one by one.
 * One that shrank is set whole (JSON has no operation to cut an array short).
 */
function diffArrays(before: unknown[], after: unknown[], path: PathKey[], ops: PatchOp[]): void {
  if (after.length < before.length) {
    ops.push([path.slice(), after]);
    return;
  }
  for (let i = 0; i < after.length; i++) {
    // JSON writes a hole, `undefined`, a function or a symbol in an array as null.
    const value = isWritten(after[i]) ? after[i] : null;
    if (i >= before.length) ops.push([at(path, i), value]);
    else {
      const was = isWritten(before[i]) ? before[i] : null;
      if (was !== value) diffAt(was, value, path, i, ops);
    }
  }
}

/**
 * What JSON writes for an object with `toJSON` that gives a record or an array (a stage table):
 * that value, to look into. Other values, and `toJSON`s that give a leaf (a `Date`), as they are.
 */
function asWritten(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON !== "function") return value;
  const written: unknown = toJSON.call(value);
  return typeof written === "object" && written !== null ? written : value;
}

/** Two values JSON writes alike, when neither is an array or plain record to look into. */
function sameLeaf(before: unknown, after: unknown): boolean {
  if (typeof before !== "object" || typeof after !== "object" || before === null || after === null)
    return Object.is(before, after) || (Number.isNaN(before) && Number.isNaN(after));
  return JSON.stringify(before) === JSON.stringify(after);
}

/**
 * The common case, the same keys in the same order: only values to compare. False, when a key
 * whose value JSON left out gets one (it would be written at the end of the record, not in its
 * place): the caller compares keys then.
 */
function sameValuesOf(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  keys: string[],
  path: PathKey[],
  ops: PatchOp[],
): boolean {
  for (const key of keys) {
    const was = before[key];
    const value = after[key];
    if (was === value) continue;
    if (!isWritten(value)) {
      if (isWritten(was)) ops.push([at(path, key)]);
    } else if (!isWritten(was)) return false;
    else diffAt(was, value, path, key, ops);
  }
  return true;
}

function sameKeys(before: string[], after: string[]): boolean {
  if (before.length !== after.length) return false;
  for (let i = 0; i < before.length; i++) if (before[i] !== after[i]) return false;
  return true;
}

/** A key an object lists before the others, in ascending order: an array index's form. */
const isIntegerKey = (key: string): boolean => /^(0|[1-9]\d{0,8})$/.test(key);

const isWritten = (value: unknown): boolean =>
  value !== undefined && typeof value !== "function" && typeof value !== "symbol";

/** An object JSON writes key by key: not an array, no `toJSON`. */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { toJSON?: unknown }).toJSON !== "function"
  );
}

/**
 * `base` with the operations applied, `base` itself untouched: each container on a path that
 * changes is copied once, the rest shared. Both are parsed JSON. Throws when an operation's path
 * does not lead through containers of `base` (the patch was not made against it).
 */
export function applyPatch(base: unknown, ops: readonly PatchOp[]): unknown {
  const copied = new Set<object>();
  const copy = (value: unknown): Record<PathKey, unknown> => {
    if (typeof value !== "object" || value === null)
      throw new Error("a patch path leads through a value that is not an object or array");
    if (copied.has(value)) return value as Record<PathKey, unknown>;
    const made = Array.isArray(value) ? [...value] : { ...value };
    copied.add(made);
    return made as Record<PathKey, unknown>;
  };
  let root = base;
  for (const op of ops) {
    const [path] = op;
    if (path.length === 0) {
      root = op[1];
      continue;
    }
    root = copy(root);
    let parent = root as Record<PathKey, unknown>;
    for (const key of path.slice(0, -1)) {
      const child = copy(parent[key]);
      parent[key] = child;
      parent = child;
    }
    const last = path[path.length - 1] as PathKey;
    if (op.length === 2) parent[last] = op[1];
    else if (Object.hasOwn(parent, last)) delete parent[last];
    else throw new Error(`a patch deletes ${path.join(".")}, which the snapshot does not have`);
  }
  return root;
}

/**
 * A patch as a row stores it, each operation's path told from the one before's (operations come
 * in the order of a walk of the snapshot, so neighbours share most of their path):
 * `[kept, ...keys, value]` sets, `[-kept - 1, ...keys]` deletes, where `kept` is how many keys
 * it shares with the path before.
 */
export type PackedOp = [number, ...unknown[]];

export function packPatch(ops: readonly PatchOp[]): PackedOp[] {
  let previous: PathKey[] = [];
  return ops.map((op) => {
    const [path] = op;
    let kept = 0;
    while (kept < path.length && kept < previous.length && path[kept] === previous[kept]) kept++;
    previous = path;
    const keys = path.slice(kept);
    return op.length === 2 ? [kept, ...keys, op[1]] : [-kept - 1, ...keys];
  });
}

/** The operations of a packed patch; throws when one does not read as an operation. */
export function unpackPatch(packed: readonly unknown[]): PatchOp[] {
  let previous: PathKey[] = [];
  return packed.map((each) => {
    if (!Array.isArray(each) || !Number.isInteger(each[0]))
      throw new Error("a patch operation is not [kept, ...keys]");
    const [head, ...rest] = each as [number, ...unknown[]];
    const deletes = head < 0;
    const kept = deletes ? -head - 1 : head;
    const keys = deletes ? rest : rest.slice(0, -1);
    if (kept > previous.length || (!deletes && rest.length === 0))
      throw new Error("a patch operation does not follow the one before it");
    if (!keys.every((key) => typeof key === "string" || typeof key === "number"))
      throw new Error("a patch path holds a key that is not a string or index");
    const path = [...previous.slice(0, kept), ...(keys as PathKey[])];
    previous = path;
    return deletes ? [path] : [path, rest.at(-1)];
  });
}
