/**
 * A record built by `build` the first time anything looks into it (a property read, a key
 * listing, `in`, a spread), then kept: the same record every time after. Until then, passing it
 * around (or spreading the object that holds it) costs nothing.
 */
export function lazyRecord<T extends object>(build: () => T): T {
  const target = {} as T;
  builders.set(target, build);
  return new Proxy(target, FILL_FIRST as ProxyHandler<T>);
}

/** The builds of the records not looked into yet, by their target. */
const builders = new WeakMap<object, () => object>();

/** The target, built first if it was not: its build is forgotten once it has run through. */
function filled(target: object): object {
  const build = builders.get(target);
  if (build) {
    Object.assign(target, build());
    builders.delete(target);
  }
  return target;
}

/** One handler for every lazy record (a host has one): its traps find the record in the target. */
const FILL_FIRST: ProxyHandler<object> = {
  get: (target, key) => Reflect.get(filled(target), key),
  has: (target, key) => Reflect.has(filled(target), key),
  ownKeys: (target) => Reflect.ownKeys(filled(target)),
  getOwnPropertyDescriptor: (target, key) => Reflect.getOwnPropertyDescriptor(filled(target), key),
  set: (target, key, value) => Reflect.set(filled(target), key, value),
  defineProperty: (target, key, descriptor) =>
    Reflect.defineProperty(filled(target), key, descriptor),
  deleteProperty: (target, key) => Reflect.deleteProperty(filled(target), key),
};
