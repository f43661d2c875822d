import {
  type Document,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  type Pair,
  parseDocument,
  visit,
  type YAMLMap,
} from "yaml";
import type { Position } from "./diagnostics.js";
import { readPlainYaml } from "./plain-yaml.js";

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

type ParsedYaml = { ok: true; value: YamlSource } | { ok: false; problems: YamlProblem[] };

/**
 * Parses YAML keeping source positions. `firstLine` is the line the text starts on in its file.
 * Plain YAML is read fast (`readPlainYaml`) and parsed again for positions only when one is asked
 * for, i.e. when something is reported; anything else, problems included, is parsed with
 * positions at once.
 */
export function parseYamlSource(text: string, firstLine = 1): ParsedYaml {
  const plain = readPlainYaml(text);
  if (!plain) return parseWithPositions(text, firstLine);
  let locator: ((path: DataPath) => Position) | undefined;
  const locate = (path: DataPath) => {
    locator ??= positioned(text, firstLine).locate;
    return locator(path);
  };
  return { ok: true, value: { data: plain.data, locate } };
}

/**
 * Duplicate keys are problems, not silent overrides; they are found here, in one pass over each
 * mapping, since the parser's own check compares every key with every earlier one.
 */
function parseWithPositions(text: string, firstLine: number): ParsedYaml {
  const { document, at, locate } = positioned(text, firstLine);
  const problems = [
    ...document.errors.map((e) => ({ ...at(e.pos[0]), message: firstLineOf(e.message) })),
    ...duplicateKeys(document, at),
    ...recursiveAliases(document, at),
  ].sort((a, b) => a.line - b.line || a.column - b.column);
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
  return { ok: true, value: { data, locate } };
}

/** The `yaml` package's Document of `text`, and where its offsets and data paths sit. */
function positioned(text: string, firstLine: number) {
  const lineCounter = new LineCounter();
  // logLevel "error": a collection used as a key becomes a string key without a process
  // warning on stderr; the shape checks then report it like any other key.
  const document = parseDocument(text, {
    lineCounter,
    prettyErrors: false,
    uniqueKeys: false,
    logLevel: "error",
  });
  const at = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line: line + firstLine - 1, column: col };
  };
  const keyIndex = new WeakMap<YAMLMap, Map<unknown, Pair>>();
  const locate = (path: DataPath): Position =>
    locateNode(document.contents, path, at, keyIndex) ?? { line: firstLine, column: 1 };
  return { document, at, locate };
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

/** `keyIndex` keeps each mapping's pairs by key once looked into, so many lookups stay linear. */
function locateNode(
  root: unknown,
  path: DataPath,
  at: (offset: number) => Position,
  keyIndex: WeakMap<YAMLMap, Map<unknown, Pair>>,
): Position | undefined {
  let node = root as Node | null;
  let found: Position | undefined;
  for (const segment of path) {
    let next: unknown;
    let keyOffset: number | undefined;
    if (isMap(node)) {
      const pair = pairsByKey(node, keyIndex).get(segment);
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

function pairsByKey(map: YAMLMap, keyIndex: WeakMap<YAMLMap, Map<unknown, Pair>>) {
  let pairs = keyIndex.get(map);
  if (!pairs) {
    pairs = new Map();
    for (const pair of map.items) {
      if (isScalar(pair.key) && !pairs.has(pair.key.value)) pairs.set(pair.key.value, pair);
    }
    keyIndex.set(map, pairs);
  }
  return pairs;
}

/** A key a mapping already has, reported at the repeat (keys that are collections never clash). */
function duplicateKeys(document: Document, at: (offset: number) => Position): YamlProblem[] {
  const problems: YamlProblem[] = [];
  visit(document, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        if (!isScalar(key)) continue;
        const value = key.value;
        if (seen.has(value)) {
          problems.push({ ...at(key.range?.[0] ?? 0), message: "Map keys must be unique" });
        }
        seen.add(value);
      }
    },
  });
  return problems;
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
