import { type ErrorCode, err, ok, type Result, StagechartError } from "../errors.js";
import type { RegularRead } from "../files.js";
import type { ToolOutcome } from "./types.js";

/** Larger files are refused rather than loaded whole into memory. */
export const MAX_TEXT_FILE_BYTES = 10 * 1024 * 1024;

// ignoreBOM keeps a byte-order mark in the text, so an Edit writes it back.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A file's failure as a tool error, naming the path the model gave. */
export function fileError(error: unknown, path: string): StagechartError {
  const code = (error as NodeJS.ErrnoException).code;
  const known: Record<string, [Extract<ErrorCode, `ToolTerminal/${string}`>, string]> = {
    ENOENT: ["ToolTerminal/FileNotFound", "does not exist"],
    EISDIR: ["ToolTerminal/IsDirectory", "is a directory, not a file"],
    ENOTDIR: ["ToolTerminal/NotADirectory", "has a file where a directory should be"],
    // What mkdir says when a parent it must create is already a file.
    EEXIST: ["ToolTerminal/NotADirectory", "has a file where a directory should be"],
    EACCES: ["ToolTerminal/PermissionDenied", "cannot be accessed: permission denied"],
    EPERM: ["ToolTerminal/PermissionDenied", "cannot be accessed: operation not permitted"],
    // Files are opened without following links, after their path was checked with its links.
    ELOOP: [
      "ToolTerminal/SandboxEscape",
      "was replaced by a symbolic link after it was checked; it is not followed",
    ],
  };
  const [errorCode, why] = (code && known[code]) || [
    "ToolTerminal/FileSystemError",
    `cannot be accessed: ${error instanceof Error ? error.message : String(error)}`,
  ];
  return new StagechartError(errorCode, `${path} ${why}`, { path });
}

export const fileFailure = (error: unknown, path: string): ToolOutcome => ({
  ok: false,
  error: fileError(error, path),
});

/** The text of what reading a file found; directories, special, binary and oversized files are errors. */
export function textOf(read: RegularRead, path: string): Result<string> {
  if (read.kind === "directory") return err(fileError({ code: "EISDIR" }, path));
  if (read.kind === "special") return err(notARegularFile(path, read.what));
  if (read.size > MAX_TEXT_FILE_BYTES || read.bytes.length > MAX_TEXT_FILE_BYTES) {
    const bytes = Math.max(read.size, read.bytes.length);
    return err(
      new StagechartError(
        "ToolTerminal/FileTooLarge",
        `${path} is ${bytes} bytes; files over ${MAX_TEXT_FILE_BYTES} bytes are not read`,
        { path, bytes },
      ),
    );
  }
  return decodeText(read.bytes, path);
}

/** A FIFO, socket or device: never read or written, which could wait or go on forever. */
export const notARegularFile = (path: string, what: string): StagechartError =>
  new StagechartError(
    "ToolTerminal/NotARegularFile",
    `${path} is ${what}, not a regular file; only regular files are read or written`,
    { path },
  );

function decodeText(bytes: Buffer, path: string): Result<string> {
  const binary = (why: string) =>
    err(
      new StagechartError("ToolTerminal/BinaryFile", `${path} is a binary file (${why})`, { path }),
    );
  if (bytes.includes(0)) return binary("it contains NUL bytes");
  try {
    return ok(utf8.decode(bytes));
  } catch {
    return binary("it is not UTF-8 text");
  }
}
