import {
  type Document,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  visit,
} from "yaml";
import type { Position } from "./diagnostics.js";

export type DataPath = readonly (string | number)[];

/** YAML parsed into plain data that still knows where each of its nodes sits in the source. */
export interface YamlSource {
  data: unknown;
  /** The position of the key (or list item) at `path`, or of the nearest parent present. */
  locate(path: DataPath): Position;
}

export interface YamlProblem extends Position {
  message: string;
}

/**
 * Parses YAML keeping source positions. `firstLine` is the line the text starts on in its file.
 * Duplicate keys are problems, not silent overrides.
 */
export function parseYamlSource(
  text: string,
  firstLine = 1,
): { ok: true; value: YamlSource } | { ok: false; problems: YamlProblem[] } {
  const lineCounter = new LineCounter();
  // logLevel "error": a collection used as a key becomes a string key without a process
  // warning on stderr; the shape checks then report it like any other key.
  const document = parseDocument(text, {
    lineCounter,
    prettyErrors: false,
    uniqueKeys: true,
    logLevel: "error",
  });
  const at = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line: line + firstLine - 1, column: col };
  };
  const problems = [
    ...document.errors.map((e) => ({ ...at(e.pos[0]), message: firstLineOf(e.message) })),
    ...recursiveAliases(document, at),
  ];
  if (problems.length > 0) return { ok: false, problems };
  let data: unknown;
  try {
    data = document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // An alias to no anchor, or aliases that would expand past the limit (an "alias bomb").
    const message = error instanceof Error ? error.message : String(error);
    const alias = firstAliasOffset(document);
    return {
      ok: false,
      problems: [{ ...at(alias ?? 0), message: firstLineOf(message) }],
    };
  }
  return {
    ok: true,
    value: {
      data,
      locate: (path) => locateNode(document.contents, path, at) ?? { line: firstLine, column: 1 },
    },
  };
}

/** Where the first alias that names no anchor sits, else the first alias at all. */
function firstAliasOffset(document: Document): number | undefined {
  let unresolved: number | undefined;
  let first: number | undefined;
  visit(document, {
    Alias(_, alias) {
      const offset = alias.range?.[0];
      first ??= offset;
      if (unresolved === undefined && !alias.resolve(document)) unresolved = offset;
    },
  });
  return unresolved ?? first;
}

function locateNode(
  root: unknown,
  path: DataPath,
  at: (offset: number) => Position,
): Position | undefined {
  let node = root as Node | null;
  let found: Position | undefined;
  for (const segment of path) {
    let next: unknown;
    let keyOffset: number | undefined;
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && item.key.value === segment);
      next = pair?.value;
      keyOffset = isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
    } else if (isSeq(node) && typeof segment === "number") {
      next = node.items[segment];
      keyOffset = (next as Node | undefined)?.range?.[0];
    }
    if (keyOffset === undefined) break;
    found = at(keyOffset);
    node = next as Node | null;
  }
  return found;
}

/** An alias inside the node it names would make the data infinite (and schema checks never end). */
function recursiveAliases(document: Document, at: (offset: number) => Position): YamlProblem[] {
  const problems: YamlProblem[] = [];
  visit(document, {
    Alias(_, alias) {
      const [start, , end] = alias.resolve(document)?.range ?? [];
      const offset = alias.range?.[0];
      if (offset === undefined || start === undefined || end === undefined) return;
      if (start <= offset && offset < end) {
        problems.push({
          ...at(offset),
          message: `*${alias.source} refers to a node that contains it, which would make the data infinite`,
        });
      }
    },
  });
  return problems;
}

const firstLineOf = (message: string): string => message.split("\n")[0] ?? message;
