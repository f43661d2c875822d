import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { scriptFileSchema } from "../../src/models/script-schema.js";
import type * as z from "../../src/zod.js";
import { REPO_ROOT } from "../support/cli.js";

/** Every key a mapping anywhere in `schema` takes, found by walking the schema itself. */
function keysOf(schema: z.core.$ZodType): Set<string> {
  const keys = new Set<string>();
  const walk = (node: z.core.$ZodType): void => {
    const def = node._zod.def as unknown as Record<string, z.core.$ZodType> & { type: string };
    if (def.type === "object") {
      const shape = (def as unknown as { shape: Record<string, z.core.$ZodType> }).shape;
      for (const [key, value] of Object.entries(shape)) {
        keys.add(key);
        walk(value);
      }
    }
    const inner = { optional: "innerType", record: "valueType", array: "element", pipe: "in" };
    const next = inner[def.type as keyof typeof inner];
    if (next && def[next]) walk(def[next]);
  };
  walk(schema);
  return keys;
}

describe("the script format's documentation", () => {
  const page = readFileSync(join(REPO_ROOT, "docs/guide/scripted-model.md"), "utf8");

  it("walks the schema down to the keys of entries, calls and usage", () => {
    expect([...keysOf(scriptFileSchema)]).toEqual(
      expect.arrayContaining(["stages", "answers", "tool", "calls", "status", "outputTokens"]),
    );
  });

  it("documents every key the schema takes, as code", () => {
    const undocumented = [...keysOf(scriptFileSchema)].filter(
      (key) => !new RegExp(`\`${key}\`|\\{ ?${key}[,:}]|, ${key} ?\\}`).test(page),
    );
    expect(undocumented).toEqual([]);
  });

  it("is linked from the models page, in a paragraph that names the keys", () => {
    const page = readFileSync(join(REPO_ROOT, "docs/how-to/models.md"), "utf8");
    const paragraph = page.split("\n\n").find((p) => p.includes("(/guide/scripted-model)"));
    for (const key of keysOf(scriptFileSchema)) {
      if (key === "inputTokens" || key === "outputTokens") continue;
      expect(paragraph).toContain(`\`${key}\``);
    }
  });
});
