import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";

/** What reading a path as a regular file found. */
export type RegularRead =
  | { kind: "file"; bytes: Buffer; size: number }
  | { kind: "directory" }
  | { kind: "special"; what: string };

/**
 * Reads up to `limit` bytes of a regular file; a directory or a special file (a FIFO, a socket,
 * a device) is reported instead of read. The file is opened non-blocking and checked on the
 * open handle, so a FIFO never waits for a writer, a device is never read, and nothing can be
 * swapped in between. When the file has `limit` bytes or more, nothing is read: `size` says how
 * large it is. Other failures (ENOENT, EACCES, …) are thrown as they are.
 */
export function readRegularFile(file: string, limit: number): RegularRead {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EISDIR") return { kind: "directory" };
    throw error;
  }
  try {
    return readOpenFile(fd, limit);
  } finally {
    closeSync(fd);
  }
}

/** `readRegularFile` of a file already open for reading (non-blocking); leaves it open. */
export function readOpenFile(fd: number, limit: number): RegularRead {
  const info = fstatSync(fd);
  if (info.isDirectory()) return { kind: "directory" };
  if (!info.isFile()) return { kind: "special", what: specialKind(info) };
  if (info.size >= limit) return { kind: "file", bytes: Buffer.alloc(0), size: info.size };
  // One byte more than its size, so a file that grew since is read up to the limit anyway.
  const buffer = Buffer.alloc(Math.min(limit, info.size + 1));
  let read = 0;
  for (let got = -1; got !== 0 && read < buffer.length; read += got) {
    got = readSync(fd, buffer, read, buffer.length - read, read);
  }
  return { kind: "file", bytes: buffer.subarray(0, read), size: info.size };
}

/** What kind of special file `info` describes, as a phrase: "a FIFO (named pipe)", … */
export function specialKind(info: Stats): string {
  if (info.isFIFO()) return "a FIFO (named pipe)";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice()) return "a character device";
  if (info.isBlockDevice()) return "a block device";
  return "a special file";
}

/** A text read in whole from a regular file, or why it cannot be: for files a user names. */
export function readRegularText(
  file: string,
  limit: number,
): { ok: true; text: string } | { ok: false; why: string } {
  let read: RegularRead;
  try {
    read = readRegularFile(file, limit + 1);
  } catch (error) {
    return { ok: false, why: error instanceof Error ? error.message : String(error) };
  }
  if (read.kind === "directory") return { ok: false, why: "it is a directory" };
  if (read.kind === "special") return { ok: false, why: `it is ${read.what}, not a regular file` };
  if (read.size > limit)
    return { ok: false, why: `it is ${read.size} bytes, over the limit of ${limit}` };
  return { ok: true, text: read.bytes.toString("utf8") };
}
