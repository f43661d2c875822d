import { describe, expect, it } from "vitest";
import { printedBy } from "./support/fresh-process.js";

describe("stagechart's zod (src/zod.ts)", () => {
  it("gives English messages when nothing else set a locale", () => {
    const message = printedBy(`
      const z = await import("./dist/zod.js");
      console.log(z.string().safeParse(1).error.issues[0].message);
    `);
    expect(message).toBe("Invalid input: expected string, received number");
  });

  it("keeps the locale an embedding application set before loading it", () => {
    const message = printedBy(`
      import * as z from "zod";
      z.config(z.locales.de());
      await import("./dist/zod.js");
      console.log(z.string().safeParse(1).error.issues[0].message);
    `);
    expect(message).toMatch(/^Ungültige Eingabe/);
  });

  it("parses a value that contains itself without overflowing the stack, as classic zod does", () => {
    const outcome = printedBy(`
      const z = await import("./dist/zod.js");
      const node = z.object({ get next() { return z.optional(node); } });
      const value = {};
      value.next = value;
      try { console.log(node.safeParse(value).success); } catch (error) { console.log(error.name); }
    `);
    expect(outcome).toBe("true");
  });
});
