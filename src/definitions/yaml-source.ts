import type { Position } from "./diagnostics.js";
import { readPlainYaml } from "./plain-yaml.js";
import {
  type DataPath,
  type ParsedYaml,
  parseWithPositions,
  positioned,
} from "./yaml-positions.js";

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
