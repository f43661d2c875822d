/**
 * A JSON-like value with `change` applied to every string in it, keys excepted. Copied only
 * where a string changed: a value `change` leaves alone (nearly every reply and tool output) is
 * handed back as it is, with nothing allocated.
 */
export function mapStrings<T>(value: T, change: (text: string) => string): T {
  if (typeof value === "string") return change(value) as T;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, index) => {
      const changed = mapStrings(item, change);
      if (changed === item) return;
      copy ??= [...value];
      copy[index] = changed;
    });
    return (copy ?? value) as T;
  }
  if (value !== null && typeof value === "object") {
    const object = value as Record<string, unknown>;
    let copy: Record<string, unknown> | undefined;
    for (const key of Object.keys(object)) {
      const changed = mapStrings(object[key], change);
      if (changed === object[key]) continue;
      copy ??= { ...object };
      copy[key] = changed;
    }
    return (copy ?? value) as T;
  }
  return value;
}
