import { Scalar } from "yaml";

/**
 * Counters of work, for complexity tests: work is counted, not timed. Each patches a prototype
 * only while `work` runs.
 */

/** Every read of a YAML scalar's value (each key comparison reads two), by the parser and the loader alike. */
export async function scalarReads(work: () => Promise<unknown> | unknown): Promise<number> {
  const values = new WeakMap<object, unknown>();
  let reads = 0;
  Object.defineProperty(Scalar.prototype, "value", {
    configurable: true,
    get(this: object) {
      reads++;
      return values.get(this);
    },
    set(this: object, value: unknown) {
      values.set(this, value);
    },
  });
  try {
    await work();
  } finally {
    Reflect.deleteProperty(Scalar.prototype, "value");
  }
  return reads;
}

/**
 * How many elements linear searches (`includes`, `indexOf`) may have compared: the length of
 * every array searched, summed.
 */
export async function searchedElements(work: () => Promise<unknown> | unknown): Promise<number> {
  const { includes, indexOf } = Array.prototype;
  let searched = 0;
  Array.prototype.includes = function (this: unknown[], ...args: [unknown, number?]) {
    searched += this.length;
    return includes.apply(this, args);
  };
  Array.prototype.indexOf = function (this: unknown[], ...args: [unknown, number?]) {
    searched += this.length;
    return indexOf.apply(this, args);
  };
  try {
    await work();
  } finally {
    Array.prototype.includes = includes;
    Array.prototype.indexOf = indexOf;
  }
  return searched;
}
