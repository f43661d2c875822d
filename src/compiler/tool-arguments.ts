import type { JsonValue } from "../tools/types.js";

/**
 * How deep objects and arrays may nest in a tool call's arguments. Deeper values would overflow
 * the stack of the recursive walks that follow the parse (the digest, the schema check, the
 * journal), so they are refused before it, the way arguments that are not JSON are.
 */
export const MAX_ARGUMENT_DEPTH = 100;

export type ParsedArguments = { ok: true; args: JsonValue } | { ok: false; error: string };

/** A tool call's arguments (`""` is `{}`), or why they cannot be used. */
export function parseToolArguments(input: string): ParsedArguments {
  if (input.trim() === "") return { ok: true, args: {} };
  if (nestsDeeperThan(input, MAX_ARGUMENT_DEPTH)) {
    return {
      ok: false,
      error: `the arguments are nested deeper than ${MAX_ARGUMENT_DEPTH} levels of objects and arrays`,
    };
  }
  try {
    return { ok: true, args: JSON.parse(input) as JsonValue };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `the arguments are not valid JSON: ${why}` };
  }
}

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether JSON text opens more than `limit` objects or arrays at once, strings aside. Compares
 * char codes (numbers), not one-character strings; a text shorter than the limit cannot open
 * that many, and is not read at all (every tool call's arguments come through here).
 */
function nestsDeeperThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return false;
}
