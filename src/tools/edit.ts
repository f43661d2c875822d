import { fileFailure } from "./files.js";
import { failure, success } from "./outcome.js";
import { openInRoot, type PlaceInRoot, readTextIn } from "./root-files.js";
import type { Tool, ToolOutcome } from "./types.js";

export interface EditArgs {
  path: string;
  old: string;
  new: string;
  /** Replace every occurrence instead of requiring exactly one. */
  replaceAll?: boolean;
}

export const editTool: Tool<EditArgs> = {
  name: "Edit",
  description:
    "Replace an exact string in a text file. `old` must occur exactly once (include surrounding " +
    "lines to make it unique) unless `replaceAll` is true. Repeating an edit that is already " +
    "applied succeeds with alreadyApplied: true and changes nothing. Paths are relative to the " +
    "project root.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", minLength: 1, description: "File path relative to the project root" },
      old: { type: "string", minLength: 1, description: "Exact text to replace" },
      new: { type: "string", description: "Replacement text" },
      replaceAll: { type: "boolean", description: "Replace every occurrence of `old`" },
    },
    required: ["path", "old", "new"],
    additionalProperties: false,
  },
  mutates: true,
  summarize: (args) => args.path,
  async execute({ path, old, new: replacement, replaceAll = false }, { root }) {
    if (old === replacement) {
      return failure("ToolTerminal/InvalidToolInput", "old and new are the same text", { path });
    }
    const place = openInRoot(root, path);
    if (!place.ok) return place;
    try {
      return await replaceIn(place.value, { path, old, new: replacement, replaceAll });
    } finally {
      place.value.directory.close();
    }
  },
};

/** The edit, made in the file's directory as it was opened: read and written through it. */
async function replaceIn(place: PlaceInRoot, args: Required<EditArgs>): Promise<ToolOutcome> {
  const { path, old, new: replacement, replaceAll } = args;
  const file = readTextIn(place, path);
  if (!file.ok) return file;
  const { text, mode } = file.value;

  const found = occurrences(text, old);
  if (isAlreadyApplied(text, found, old, replacement)) {
    return success({ path, replacements: 0, alreadyApplied: true });
  }
  if (found.length === 0) {
    return failure("ToolTerminal/EditNoMatch", `the text to replace does not occur in ${path}`, {
      path,
    });
  }
  if (found.length > 1 && !replaceAll) {
    return failure(
      "ToolTerminal/EditAmbiguous",
      `the text to replace occurs ${found.length} times in ${path}; add surrounding lines to ` +
        "make it unique, or set replaceAll",
      { path, occurrences: found.length },
    );
  }
  try {
    const edited = replaceAt(text, found, old.length, replacement);
    await place.directory.writeFileAtomic(place.name, edited, mode);
  } catch (error) {
    return fileFailure(error, path);
  }
  return success({ path, replacements: found.length, alreadyApplied: false });
}

/** Start offsets of the non-overlapping occurrences of `needle`, left to right. */
function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
    found.push(at);
  }
  return found;
}

/**
 * The edit was already made when `new` is in the file and no `old` is left outside a copy of
 * `new`. (When `new` contains `old`, e.g. a line appended after it, the `old` inside is the
 * result of the first run, not a target for a second.) A deletion leaves no trace to check, so
 * a missing `old` stays an error rather than hiding a mistyped one.
 */
function isAlreadyApplied(text: string, found: number[], old: string, replacement: string) {
  if (replacement === "" || !text.includes(replacement)) return false;
  const oldInNew = replacement.indexOf(old);
  if (oldInNew === -1) return found.length === 0;
  return found.every((at) => at >= oldInNew && text.startsWith(replacement, at - oldInNew));
}

function replaceAt(text: string, found: number[], length: number, replacement: string): string {
  let result = "";
  let from = 0;
  for (const at of found) {
    result += text.slice(from, at) + replacement;
    from = at + length;
  }
  return result + text.slice(from);
}
