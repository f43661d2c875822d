import { fileFailure, notARegularFile } from "./files.js";
import { failure, success } from "./outcome.js";
import { openInRoot } from "./root-files.js";
import type { Tool } from "./types.js";

export interface WriteArgs {
  path: string;
  content: string;
}

export const writeTool: Tool<WriteArgs> = {
  name: "Write",
  description:
    "Create or overwrite a file with the given content, creating missing parent directories. " +
    "Writing the content a file already has changes nothing (unchanged: true). Paths are " +
    "relative to the project root.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", minLength: 1, description: "File path relative to the project root" },
      content: { type: "string", description: "The file's entire new content" },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  mutates: true,
  summarize: (args) => args.path,
  async execute({ path, content }, { root }) {
    const place = openInRoot(root, path, { create: true });
    if (!place.ok) return place;
    const { directory, name } = place.value;
    const bytes = Buffer.from(content);
    try {
      const found = readExisting(() => directory.readFile(name, bytes.length + 1));
      const existing = found?.read;
      if (existing?.kind === "directory") {
        return failure("ToolTerminal/IsDirectory", `${path} is a directory, not a file`, { path });
      }
      if (existing?.kind === "special") {
        return { ok: false, error: notARegularFile(path, existing.what) };
      }
      if (existing?.size === bytes.length && existing.bytes.equals(bytes)) {
        return success({ path, bytes: bytes.length, created: false, unchanged: true });
      }
      // An existing file keeps its permission bits: a script stays executable.
      await directory.writeFileAtomic(name, content, found?.mode);
      return success({ path, bytes: bytes.length, created: !existing, unchanged: false });
    } catch (error) {
      return fileFailure(error, path);
    } finally {
      directory.close();
    }
  },
};

/** What reading the file found, or undefined when there is none yet. */
function readExisting<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
