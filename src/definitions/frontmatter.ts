import matter from "gray-matter";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  diagnostic,
  type Position,
  START,
} from "./diagnostics.js";
import { type DataPath, parseYamlSource } from "./yaml-source.js";

/** A Markdown file split into its YAML frontmatter (with source positions) and its body. */
export interface Frontmatter {
  data: unknown;
  /** Where a path in the data sits in the file: the key itself, or the nearest parent present. */
  locate(path: DataPath): Position;
  body: string;
  /** The file line the body starts on. */
  bodyLine: number;
}

// gray-matter finds the delimiters; YAML is parsed by `yaml` so every node keeps its position.
const splitOnly = { parse: () => ({}), stringify: () => "" };
const SPLIT_OPTIONS = { engines: { yaml: splitOnly, json: splitOnly } };

export function splitFrontmatter(
  text: string,
  file: string,
): { ok: true; value: Frontmatter } | { ok: false; diagnostics: Diagnostic[] } {
  const source = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  if (!matter.test(source)) {
    return fail(
      diagnostic(
        file,
        START,
        DIAGNOSTIC_CODES.frontmatterMissing,
        "no YAML frontmatter: a stage file starts with a `---` line, its fields, and a closing `---` line",
      ),
    );
  }
  let split: matter.GrayMatterFile<string>;
  try {
    split = matter(source, SPLIT_OPTIONS);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return fail(
      diagnostic(file, START, DIAGNOSTIC_CODES.yamlInvalid, `unreadable frontmatter: ${why}`),
    );
  }
  // `matter` is the raw text right after the opening `---`, so its line 1 is the file's line 1.
  const parsed = parseYamlSource(split.matter ?? "");
  if (!parsed.ok) {
    return {
      ok: false,
      diagnostics: parsed.problems.map((p) =>
        diagnostic(file, p, DIAGNOSTIC_CODES.yamlInvalid, `broken YAML: ${p.message}`),
      ),
    };
  }
  const bodyStart = source.length - split.content.length;
  return {
    ok: true,
    value: {
      data: parsed.value.data,
      locate: parsed.value.locate,
      body: split.content,
      bodyLine: countLines(source.slice(0, bodyStart)) + 1,
    },
  };
}

function countLines(text: string): number {
  let lines = 0;
  for (const char of text) if (char === "\n") lines++;
  return lines;
}

const fail = (d: Diagnostic): { ok: false; diagnostics: Diagnostic[] } => ({
  ok: false,
  diagnostics: [d],
});
