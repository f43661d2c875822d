import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  diagnostic,
  type Position,
  START,
} from "./diagnostics.js";
import type { DataPath } from "./yaml-positions.js";
import { parseYamlSource } from "./yaml-source.js";

/** A Markdown file split into its YAML frontmatter (with source positions) and its body. */
export interface Frontmatter {
  data: unknown;
  /** Where a path in the data sits in the file: the key itself, or the nearest parent present. */
  locate(path: DataPath): Position;
  body: string;
  /** The file line the body starts on. */
  bodyLine: number;
}

/** The languages a frontmatter may be marked with after its opening `---`: all read as YAML. */
const YAML_LANGUAGES = new Set(["", "yaml", "yml", "json"]);

/**
 * The frontmatter's raw text and the body after it: the block runs from the opening `---` to
 * the next line starting `---` (or the end of the file). A `----` first line opens no block.
 * `matter` starts right after the opening delimiter (and its language), so its line 1 is the
 * file's line 1.
 */
function splitAtDelimiters(source: string): { language: string; matter: string; body: string } {
  if (source.startsWith("----")) return { language: "", matter: "", body: source };
  let rest = source.slice(3);
  const language = rest.slice(0, rest.indexOf("\n")).trim();
  if (language) rest = rest.slice(rest.indexOf("\n"));
  const close = rest.indexOf("\n---");
  if (close === -1) return { language, matter: rest, body: "" };
  const after = rest.slice(close + 4);
  return {
    language,
    matter: rest.slice(0, close),
    body: after.startsWith("\n") ? after.slice(1) : after,
  };
}

export function splitFrontmatter(
  text: string,
  file: string,
): { ok: true; value: Frontmatter } | { ok: false; diagnostics: Diagnostic[] } {
  const source = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  if (!source.startsWith("---")) {
    return fail(
      diagnostic(
        file,
        START,
        DIAGNOSTIC_CODES.frontmatterMissing,
        "no YAML frontmatter: a stage file starts with a `---` line, its fields, and a closing `---` line",
      ),
    );
  }
  const split = splitAtDelimiters(source);
  if (!YAML_LANGUAGES.has(split.language.toLowerCase())) {
    return fail(
      diagnostic(
        file,
        START,
        DIAGNOSTIC_CODES.yamlInvalid,
        `unreadable frontmatter: it is marked as "${split.language}", and a stage's frontmatter is YAML`,
      ),
    );
  }
  const parsed = parseYamlSource(split.matter);
  if (!parsed.ok) {
    return {
      ok: false,
      diagnostics: parsed.problems.map((p) =>
        diagnostic(file, p, DIAGNOSTIC_CODES.yamlInvalid, `broken YAML: ${p.message}`),
      ),
    };
  }
  const bodyStart = source.length - split.body.length;
  return {
    ok: true,
    value: {
      data: parsed.value.data,
      locate: parsed.value.locate,
      body: split.body,
      bodyLine: countLines(source.slice(0, bodyStart)) + 1,
    },
  };
}

function countLines(text: string): number {
  let lines = 0;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) lines++;
  return lines;
}

const fail = (d: Diagnostic): { ok: false; diagnostics: Diagnostic[] } => ({
  ok: false,
  diagnostics: [d],
});
