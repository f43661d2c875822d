import { mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { readRegularFile, specialKind } from "../files.js";
import { fileFailure, notARegularFile, writeFileAtomic } from "./files.js";
import { failure, success } from "./outcome.js";
import { resolveInRoot } from "./sandbox.js";
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
    const resolved = resolveInRoot(root, path);
    if (!resolved.ok) return resolved;
    const bytes = Buffer.byteLength(content);
    try {
      const existing = await stat(resolved.value).catch(() => undefined);
      if (existing?.isDirectory()) {
        return failure("ToolTerminal/IsDirectory", `${path} is a directory, not a file`, { path });
      }
      if (existing && !existing.isFile()) {
        return { ok: false, error: notARegularFile(path, specialKind(existing)) };
      }
      const same = existing?.size === bytes && holds(resolved.value, Buffer.from(content));
      if (same) {
        return success({ path, bytes, created: false, unchanged: true });
      }
      await mkdir(dirname(resolved.value), { recursive: true });
      await writeFileAtomic(resolved.value, content);
      return success({ path, bytes, created: !existing, unchanged: false });
    } catch (error) {
      return fileFailure(error, path);
    }
  },
};

/** Whether the regular file `file` holds exactly `content`. */
function holds(file: string, content: Buffer): boolean {
  const read = readRegularFile(file, content.length + 1);
  return read.kind === "file" && read.bytes.equals(content);
}
