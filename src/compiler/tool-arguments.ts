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

/** Whether JSON text opens more than `limit` objects or arrays at once, strings aside. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === "{" || char === "[") {
      if (++depth > limit) return true;
    } else if (char === "}" || char === "]") depth--;
  }
  return false;
}
