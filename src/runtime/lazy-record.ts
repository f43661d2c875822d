/**
 * A record built by `build` the first time anything looks into it (a property read, a key
 * listing, `in`, a spread), then kept: the same record every time after. Until then, passing it
 * around (or spreading the object that holds it) costs nothing.
 */
export function lazyRecord<T extends object>(build: () => T): T {
  const target = {} as T;
  let built = false;
  const filled = (): T => {
    if (!built) {
      Object.assign(target, build());
      built = true;
    }
    return target;
  };
  return new Proxy(target, {
    get: (_, key) => Reflect.get(filled(), key),
    has: (_, key) => Reflect.has(filled(), key),
    ownKeys: () => Reflect.ownKeys(filled()),
    getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(filled(), key),
    set: (_, key, value) => Reflect.set(filled(), key, value),
    defineProperty: (_, key, descriptor) => Reflect.defineProperty(filled(), key, descriptor),
    deleteProperty: (_, key) => Reflect.deleteProperty(filled(), key),
  });
}
