import { describe, expect, it } from "vitest";
import { lazyRecord } from "../../src/runtime/lazy-record.js";

describe("a lazy record", () => {
  it("is built the first time something looks into it, and only once", () => {
    let builds = 0;
    const record = lazyRecord(() => {
      builds++;
      return { PATH: "/usr/bin", HOME: "/home/me" };
    });
    const holder = { env: record };
    const copied = { ...holder };
    expect(builds).toBe(0);

    expect(copied.env.PATH).toBe("/usr/bin");
    expect(Object.keys(record)).toEqual(["PATH", "HOME"]);
    expect({ ...record }).toEqual({ PATH: "/usr/bin", HOME: "/home/me" });
    expect("HOME" in record).toBe(true);
    expect(JSON.stringify(record)).toBe('{"PATH":"/usr/bin","HOME":"/home/me"}');
    expect(builds).toBe(1);
  });

  it("is built again on the next look when building it threw", () => {
    let builds = 0;
    const record = lazyRecord(() => {
      builds++;
      if (builds === 1) throw new Error("transient");
      return { PATH: "/usr/bin" };
    });
    expect(() => record.PATH).toThrow("transient");
    expect(record.PATH).toBe("/usr/bin");
    expect(builds).toBe(2);
  });
});
