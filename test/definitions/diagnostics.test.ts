import { describe, expect, it } from "vitest";
import { printedBy } from "../support/fresh-process.js";

describe("diagnostics by position", () => {
  it("list files in one order whatever the process's locale", () => {
    const script = `
      import { byPosition } from "./dist/definitions/diagnostics.js";
      const at = (file) => ({ file, line: 1, column: 1 });
      console.log([at("z.md"), at("aa.md"), at("b.md")].sort(byPosition).map((d) => d.file).join(" "));
    `;
    const orderUnder = (locale: string) => printedBy(script, { LC_ALL: locale, LANG: locale });
    // Danish sorts "aa" after "z".
    expect(orderUnder("da_DK.UTF-8")).toBe("aa.md b.md z.md");
    expect(orderUnder("en_US.UTF-8")).toBe("aa.md b.md z.md");
  });
});
