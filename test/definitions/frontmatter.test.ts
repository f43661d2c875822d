import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { splitFrontmatter } from "../../src/definitions/frontmatter.js";
import { REPO_ROOT } from "../support/cli.js";
import { seedPlan } from "../support/stages.js";

const FILE = "stages/plan.md";

function split(text: string) {
  const result = splitFrontmatter(text, FILE);
  if (!result.ok) throw new Error(`expected a split, got ${JSON.stringify(result.diagnostics)}`);
  return result.value;
}

function problems(text: string) {
  const result = splitFrontmatter(text, FILE);
  if (result.ok) throw new Error("expected the frontmatter to be rejected");
  return result.diagnostics;
}

describe("splitting a stage file's frontmatter", () => {
  it("takes the lines between the opening `---` and the next line starting `---`", () => {
    const value = split("---\nid: plan\nname: Plan\n---\n# Plan\n\nBody.\n");
    expect(value.data).toEqual({ id: "plan", name: "Plan" });
    expect(value.body).toBe("# Plan\n\nBody.\n");
    expect(value.bodyLine).toBe(5);
    expect(value.locate(["name"])).toEqual({ line: 3, column: 1 });
  });

  it("keeps the file's line numbers through a BOM and CRLF line ends", () => {
    const value = split("\uFEFF---\r\nid: plan\r\n\r\nname: Plan\r\n---\r\nBody.\r\n");
    expect(value.locate(["name"])).toEqual({ line: 4, column: 1 });
    expect(value.body).toBe("Body.\n");
    expect(value.bodyLine).toBe(6);
  });

  it("accepts a language named after the opening `---`: yaml, yml or json", () => {
    for (const language of ["yaml", "yml", "json"]) {
      const value = split(`---${language}\nid: plan\n---\nBody.\n`);
      expect(value.data).toEqual({ id: "plan" });
      expect(value.locate(["id"])).toEqual({ line: 2, column: 1 });
      expect(value.body).toBe("Body.\n");
    }
  });

  it("an unclosed frontmatter runs to the end of the file, with an empty body", () => {
    const value = split("---\nid: plan\nname: Plan\n");
    expect(value.data).toEqual({ id: "plan", name: "Plan" });
    expect(value.body).toBe("");
  });

  it("a file not starting with `---` is StageFrontmatterMissing at 1:1", () => {
    expect(problems("# Plan\n---\nid: plan\n---\n")).toEqual([
      expect.objectContaining({ code: "Validation/StageFrontmatterMissing", line: 1, column: 1 }),
    ]);
  });

  it("broken YAML is StageYamlInvalid at its line in the file", () => {
    expect(problems("---\nid: plan\nturnCap: [20\n---\nBody.\n")).toMatchObject([
      { code: "Validation/StageYamlInvalid", line: 3 },
    ]);
  });

  it("splits the bundled plan stage at its closing delimiter", () => {
    const value = split(seedPlan);
    const lines = seedPlan.split("\n");
    expect(lines[value.bodyLine - 2]).toBe("---");
    expect(value.body).toBe(lines.slice(value.bodyLine - 1).join("\n"));
  });
});

describe("a frontmatter in another language", () => {
  const marker = "__stagechartFrontmatterRan";
  afterEach(() => {
    delete (globalThis as Record<string, unknown>)[marker];
  });

  it("is StageYamlInvalid, and JavaScript after `---js` is never run", () => {
    for (const language of ["js", "javascript"]) {
      const text = `---${language}\n{ id: (globalThis.${marker} = "${language}", "plan") }\n---\nBody.\n`;
      expect(problems(text)).toEqual([
        expect.objectContaining({
          code: "Validation/StageYamlInvalid",
          line: 1,
          message: `unreadable frontmatter: it is marked as "${language}", and a stage's frontmatter is YAML`,
        }),
      ]);
      expect((globalThis as Record<string, unknown>)[marker]).toBeUndefined();
    }
  });

  it("such as TOML is StageYamlInvalid naming the language", () => {
    expect(problems("---toml\nid = 'plan'\n---\nBody.\n")).toEqual([
      expect.objectContaining({
        code: "Validation/StageYamlInvalid",
        message:
          'unreadable frontmatter: it is marked as "toml", and a stage\'s frontmatter is YAML',
      }),
    ]);
  });
});

describe("loading stage files (the built module, in a fresh process: needs `npm run build`)", () => {
  it("splits frontmatter without loading gray-matter or js-yaml", () => {
    const module = pathToFileURL(join(REPO_ROOT, "dist/definitions/index.js")).href;
    const script = `const { parseStageDefinition } = await import(${JSON.stringify(module)});
if (!parseStageDefinition(${JSON.stringify(seedPlan)}, "plan.md").ok) process.exit(3);
const { createRequire } = await import("node:module");
console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script]);
    const files: string[] = JSON.parse(out.toString());
    expect(files.filter((file) => /node_modules\/(gray-matter|js-yaml)\//.test(file))).toEqual([]);
  });
});
