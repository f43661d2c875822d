import matter from "gray-matter";
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  diagnostic,
  type Position,
  START,
} from "./diagnostics.js";
import type { PathSegment } from "./template.js";

/** A Markdown file split into its YAML frontmatter (with source positions) and its body. */
export interface Frontmatter {
  data: unknown;
  /** Where a path in the data sits in the file: the key itself, or the nearest parent present. */
  locate(path: readonly PathSegment[]): Position;
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
  const raw = split.matter ?? "";
  const lineCounter = new LineCounter();
  const document = parseDocument(raw, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    return {
      ok: false,
      diagnostics: document.errors.map((e) => {
        const at = lineCounter.linePos(e.pos[0]);
        return diagnostic(
          file,
          { line: at.line, column: at.col },
          DIAGNOSTIC_CODES.yamlInvalid,
          `broken YAML: ${firstLine(e.message)}`,
        );
      }),
    };
  }
  const bodyStart = source.length - split.content.length;
  return {
    ok: true,
    value: {
      data: document.toJS({ maxAliasCount: 100 }),
      locate: (path) => locateNode(document.contents, path, lineCounter),
      body: split.content,
      bodyLine: countLines(source.slice(0, bodyStart)) + 1,
    },
  };
}

function locateNode(root: unknown, path: readonly PathSegment[], lines: LineCounter): Position {
  let node = root as Node | null;
  let found: Position = START;
  for (const segment of path) {
    let next: unknown;
    let keyAt: number | undefined;
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && item.key.value === segment);
      next = pair?.value;
      keyAt = isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
    } else if (isSeq(node) && typeof segment === "number") {
      next = node.items[segment];
      keyAt = (next as Node | undefined)?.range?.[0];
    }
    if (keyAt === undefined) break;
    const at = lines.linePos(keyAt);
    found = { line: at.line, column: at.col };
    node = next as Node | null;
  }
  return found;
}

function countLines(text: string): number {
  let lines = 0;
  for (const char of text) if (char === "\n") lines++;
  return lines;
}

const firstLine = (message: string): string => message.split("\n")[0] ?? message;

const fail = (d: Diagnostic): { ok: false; diagnostics: Diagnostic[] } => ({
  ok: false,
  diagnostics: [d],
});
