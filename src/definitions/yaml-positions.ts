import { createRequire } from "node:module";
import type { Document, Node, Pair, YAMLMap } from "yaml";
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

export type ParsedYaml = { ok: true; value: YamlSource } | { ok: false; problems: YamlProblem[] };

/**
 * YAML parsed with the `yaml` package's Document API, which keeps every node's position: for
 * what `readPlainYaml` leaves (problems included) and for positions once something is reported.
 * The package is required on first use, so reading valid plain definitions (what `validate`
 * mostly does) never loads it.
 */
const require = createRequire(import.meta.url);
let yamlPackage: typeof import("yaml") | undefined;
const yaml = (): typeof import("yaml") => {
  yamlPackage ??= require("yaml") as typeof import("yaml");
  return yamlPackage;
};

/**
 * Duplicate keys are problems, not silent overrides; they are found here, in one pass over each
 * mapping, since the parser's own check compares every key with every earlier one.
 */
export function parseWithPositions(text: string, firstLine: number): ParsedYaml {
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
export function positioned(text: string, firstLine: number) {
  const lineCounter = new (yaml().LineCounter)();
  // logLevel "error": a collection used as a key becomes a string key without a process
  // warning on stderr; the shape checks then report it like any other key.
  const document = yaml().parseDocument(text, {
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
  yaml().visit(document, {
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
    if (yaml().isMap(node)) {
      const pair = pairsByKey(node, keyIndex).get(segment);
      next = pair?.value;
      keyOffset = yaml().isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
    } else if (yaml().isSeq(node) && typeof segment === "number") {
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
      if (yaml().isScalar(pair.key) && !pairs.has(pair.key.value)) pairs.set(pair.key.value, pair);
    }
    keyIndex.set(map, pairs);
  }
  return pairs;
}

/** A key a mapping already has, reported at the repeat (keys that are collections never clash). */
function duplicateKeys(document: Document, at: (offset: number) => Position): YamlProblem[] {
  const problems: YamlProblem[] = [];
  yaml().visit(document, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        if (!yaml().isScalar(key)) continue;
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
  yaml().visit(document, {
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
