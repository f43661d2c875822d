import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { glob } from "tinyglobby";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { readPlainYaml } from "../../src/definitions/plain-yaml.js";
import { parseWithPositions } from "../../src/definitions/yaml-positions.js";

const REPO = join(import.meta.dirname, "../..");

/** The YAML of every bundled definition: pipelines, scripted models, workflows, stage frontmatter. */
async function bundledYaml(): Promise<{ file: string; text: string }[]> {
  const files = await glob(["machines/**/*.{yaml,md}", "stages/**/*.md"], { cwd: REPO });
  return files.sort().flatMap((file) => {
    const source = readFileSync(join(REPO, file), "utf8");
    if (!file.endsWith(".md")) return [{ file, text: source }];
    const matter = /^---[^\n]*\n([\s\S]*?)\n---/.exec(source)?.[1];
    return matter === undefined ? [] : [{ file, text: matter }];
  });
}

/** What `yaml` makes of `text` when it sees no problem at all (undefined when it does). */
function yamlData(text: string): { data: unknown } | undefined {
  const parsed = parseWithPositions(text, 1);
  return parsed.ok ? { data: parsed.value.data } : undefined;
}

describe("plain YAML read fast", () => {
  it("reads every bundled definition, as `yaml` reads it", async () => {
    const texts = await bundledYaml();
    expect(texts.length).toBeGreaterThan(30);
    for (const { file, text } of texts) {
      expect({ file, read: readPlainYaml(text) }).toEqual({ file, read: yamlData(text) });
    }
  });

  it("resolves plain scalars by YAML 1.2's core schema, like `yaml`", () => {
    const text = [
      "octal: 0o17",
      "hex: 0x1F",
      "exponent: 1e3",
      "infinity: -.INF",
      "nan: .NaN",
      "signed: +12",
      "padded: 007",
      "dot: 1.",
      "underscored: 1_000",
      "binary: 0b11",
      "date: 2001-12-14",
      "yes: yes",
      "on: on",
      "null: Null",
      "true: TRUE",
      "mixed: tRUE",
      "quoted: '12'",
      'escaped: "x\\u263Ay"',
      "block: |",
      "  kept",
      "   as is",
      "folded: >-",
      "  one",
      "  line",
    ].join("\n");
    // `null: Null` is a key "null": js-yaml and `yaml` disagree on null keys, so yaml reads this.
    expect(readPlainYaml(text)).toBeUndefined();
    const withoutNullKey = text.replace("null: Null", "nothing: Null");
    expect(readPlainYaml(withoutNullKey)).toEqual({ data: parse(withoutNullKey) });
    expect(readPlainYaml(withoutNullKey)?.data).toMatchObject({
      octal: 15,
      underscored: "1_000",
      binary: "0b11",
      date: "2001-12-14",
      yes: "yes",
      nothing: null,
      mixed: "tRUE",
    });
  });

  it("resolves every plain scalar, number-like or not, to what `yaml` reads", () => {
    const chars = (alphabet: string, maxLength = 4) =>
      fc.string({ unit: fc.constantFrom(...alphabet), maxLength });
    // Pieces of YAML 1.2's core forms (null, booleans, decimal, octal and hexadecimal integers,
    // floats, infinities, not-a-number), joined at random, and near misses of them.
    const piece = fc.oneof(
      chars("0123456789", 5),
      fc.constantFrom("+", "-", ".", "e", "E", "0x", "0o", "0b", "_", "~", ":"),
      fc.constantFrom("null", "Null", "NULL", "nUll", "true", "True", "TRUE", "tRUE", "false"),
      fc.constantFrom("False", "FALSE", "inf", "Inf", "INF", "nan", "NaN", "NAN", "yes", "on"),
      chars("0123456789abcdefABCDEFxo.eE+-"),
    );
    const scalar = fc
      .array(piece, { minLength: 1, maxLength: 4 })
      .map((pieces) => pieces.join(""))
      .filter((text) => text.length > 0);
    fc.assert(
      fc.property(scalar, (text) => {
        const document = `value: ${text}\nlist: [${text}]\n`;
        const read = readPlainYaml(document);
        if (read) expect(read).toEqual(yamlData(document));
      }),
      { numRuns: 3000 },
    );
  });

  it("reads an empty document, or one of comments only, as null", () => {
    expect(readPlainYaml("")).toEqual({ data: null });
    expect(readPlainYaml("# nothing\n")).toEqual({ data: null });
  });

  it("reads anchors and a few aliases, as `yaml` does", () => {
    const text = "schema: &score { type: number }\nfirst: *score\nsecond: [*score]\n";
    expect(readPlainYaml(text)).toEqual(yamlData(text));
  });

  it.each([
    ["a syntax error", "a: [1"],
    ["a duplicate key", "a: 1\na: 2\n"],
    ["a flow collection over lines (yaml checks their indentation)", "a: [1,\n2]\n"],
    ["a quoted scalar over lines", 'description: "one\ntwo"\n'],
    ["a comment right after a quote", 'a: "b"#c\n'],
    ["text on a document marker's line", "---a\n"],
    ["a tab in the indentation", "\n\t-- b\n"],
    ["a directive", "%YAML 1.1\n---\na: yes\n"],
    ["an explicit tag", "a: !!int 1\n"],
    ["a local tag", "a: !thing 1\n"],
    ["an explicit key", "? a\n: b\n"],
    ["a collection as a key", "[a]: 1\n"],
    ["an alias as a key", "a: &k x\n*k : 2\n"],
    ["an anchor before a key on its line", "a: &x b: c\n"],
    ["an alias inside its own anchor", "a: &x [*x]\n"],
    ["an alias to no anchor", "a: *nowhere\n"],
    ["many aliases", `a: &x 1\nb: [${Array.from({ length: 99 }, () => "*x").join(", ")}]\n`],
    ["a null key", "~: 1\n"],
    ["a byte order mark", '\ufeffa: "b"#c\n'],
    ["a carriage return that does not end a line", "a: 1\rb: 2\r"],
    ["a flow collection as a key of a flow mapping", "a: { enum: ,[pro, contra] }\n"],
    ["a flow collection as a flow mapping's only key", "a: { [a] }\n"],
    ["an anchored flow collection as a key of a flow mapping", "a: { &k: { b: 1 }, to: c }\n"],
    ["a mapping on a document marker's line", "--- a: 1\n"],
    ["two anchors on a node", "a: &x # c\n  &y 1\n"],
    ["an anchor on a flow collection without a space", "a: &x[b]\n"],
    ["a \\U escape", 'a: "\\U00110000"\n'],
    ["empty sequence entries", "a:\n  -\n-\n"],
    ["a sequence entry holding an empty entry", "\n- -\n- .inf\n"],
    ["a block scalar's explicit indentation", "a: |2\n   b\n"],
    ["a line longer than a key may be", `${"k".repeat(1100)}: 1\n`],
  ])("leaves %s to `yaml`", (_, text) => {
    expect(readPlainYaml(text)).toBeUndefined();
  });

  it("looks for aliases used as keys in time linear in a line's length", () => {
    // A scan from every alias to the end of its line took minutes on a line this long.
    expect(readPlainYaml(`a: ${" *x".repeat(70_000)}\n`)).toBeUndefined();
  });

  it("answers only with the data `yaml` gives without a problem, for bundled YAML edited at random", async () => {
    const texts = (await bundledYaml()).map(({ text }) => text).filter((t) => t.length < 1500);
    const edit = fc.record({
      at: fc.nat(),
      char: fc.constantFrom(
        ..." \n\t\r\ufeff:-#[]{},'\"|>&*!?%@`ab01.\\",
        "&x[",
        "- -",
        "|2",
        "{ [",
      ),
      kind: fc.constantFrom("insert", "delete", "replace"),
    });
    const edited = fc
      .tuple(fc.constantFrom(...texts), fc.array(edit, { minLength: 1, maxLength: 3 }))
      .map(([text, edits]) =>
        edits.reduce((t, { at, char, kind }) => {
          const i = at % (t.length + 1);
          const rest = kind === "insert" ? t.slice(i) : t.slice(i + 1);
          return t.slice(0, i) + (kind === "delete" ? "" : char) + rest;
        }, text),
      );
    fc.assert(
      fc.property(edited, (text) => {
        const read = readPlainYaml(text);
        if (read) expect(read).toEqual(yamlData(text));
      }),
      { numRuns: 1500 },
    );
  });
});
