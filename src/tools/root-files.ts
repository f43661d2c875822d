import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  realpathSync,
  statSync,
} from "node:fs";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join, relative } from "node:path";
import { err, ok, type Result } from "../errors.js";
import { type RegularRead, readOpenFile } from "../files.js";
import { fileError, MAX_TEXT_FILE_BYTES, textOf } from "./files.js";
import { isOutside, resolveInRoot } from "./sandbox.js";

/*
 * Files inside the root, opened so that a link swapped in after a path was checked cannot lead
 * out. `resolveInRoot` checks a path as its links are at that moment; an open by that path a
 * moment later follows whatever links are there by then. So a file or directory is opened first,
 * never through a final link, and then checked where it really is, by its open descriptor: only
 * one inside the root is used, and what is in a directory is reached through the directory's
 * descriptor, never by its path again.
 */

const { O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY } = constants;
const DIRECTORY = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
// Non-blocking: a FIFO never waits for a writer (it is refused once open, as not a regular file).
const FILE = O_RDONLY | O_NONBLOCK | O_NOFOLLOW;

/**
 * On Linux, /proc/self/fd/<fd> names where an open file really is, and a path through it reaches
 * that very directory, whatever is renamed or linked since. Elsewhere a descriptor is matched to
 * its re-resolved path by device and inode, which leaves a narrow window between the two.
 */
const THROUGH_DESCRIPTORS = existsSync("/proc/self/fd");

/** A directory inside the root, open; what is in it is reached through it, never by path. */
export class RootDirectory {
  private constructor(
    private readonly realRoot: string,
    private readonly fd: number,
    private readonly realPath: string,
  ) {}

  /**
   * Opens `realDirectory` (where `resolveInRoot` says a directory is); with `create`, missing
   * directories on the way are made, each inside the one before it.
   */
  static open(realRoot: string, realDirectory: string, create: boolean): RootDirectory {
    try {
      const { fd, real } = openInside(realRoot, realDirectory, DIRECTORY);
      return new RootDirectory(realRoot, fd, real);
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
      if (!missing || !create || realDirectory === realRoot) throw error;
    }
    const parent = RootDirectory.open(realRoot, dirname(realDirectory), true);
    try {
      return parent.subdirectory(basename(realDirectory));
    } finally {
      parent.close();
    }
  }

  /** A path to `name` in this very directory ("": the directory itself). */
  entry(name: string): string {
    return THROUGH_DESCRIPTORS ? `/proc/self/fd/${this.fd}/${name}` : join(this.realPath, name);
  }

  /** The directory `name` in this one, made if it is missing. */
  private subdirectory(name: string): RootDirectory {
    try {
      mkdirSync(this.entry(name));
    } catch (error) {
      // Made by someone else meanwhile: opened as any other, never through a link.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const { fd, real } = openInside(this.realRoot, this.entry(name), DIRECTORY);
    return new RootDirectory(this.realRoot, fd, real);
  }

  /** Reads up to `limit` bytes of `name` (see `readOpenFile`), never through a link. */
  readFile(name: string, limit: number): { read: RegularRead; mode: number } {
    const { fd } = openInside(this.realRoot, this.entry(name), FILE);
    try {
      return { read: readOpenFile(fd, limit), mode: fstatSync(fd).mode & 0o7777 };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Replaces `name` with `content` through a new temporary file beside it and a rename, so a
   * crash leaves the old file or the new one, never half of each; `mode` is given to the new
   * file (an existing file keeps its permission bits). Neither step follows a link: the
   * temporary file is created exclusively, and a rename replaces a link rather than its target.
   */
  async writeFileAtomic(name: string, content: string, mode?: number): Promise<void> {
    const temporary = this.entry(`.${name}.${randomBytes(6).toString("hex")}.tmp`);
    try {
      const handle = await open(temporary, "wx");
      try {
        await handle.writeFile(content);
        if (mode !== undefined) await handle.chmod(mode);
      } finally {
        await handle.close();
      }
      await rename(temporary, this.entry(name));
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * Opens `path` with `flags` (which never follow a final link) and returns it with where it
 * really is, or throws: ELOOP for a link, or for anything that turns out to be outside the root.
 */
function openInside(realRoot: string, path: string, flags: number): { fd: number; real: string } {
  let fd: number;
  try {
    fd = openSync(path, flags);
  } catch (error) {
    // Opened without following, a link to a directory reads as "not a directory".
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR" && (flags & O_DIRECTORY) !== 0 && isLink(path)) throw linkSwappedIn();
    throw error;
  }
  try {
    const real = realPathOf(fd, path);
    if (isOutside(relative(realRoot, real))) throw linkSwappedIn();
    return { fd, real };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function realPathOf(fd: number, openedAs: string): string {
  if (THROUGH_DESCRIPTORS) return readlinkSync(`/proc/self/fd/${fd}`);
  const real = realpathSync(openedAs);
  const [opened, found] = [fstatSync(fd), statSync(real)];
  if (opened.dev !== found.dev || opened.ino !== found.ino) throw linkSwappedIn();
  return real;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** What a path that changed into a link, or one that leads out, since its check is refused as. */
const linkSwappedIn = () =>
  Object.assign(new Error("a symbolic link was swapped in"), { code: "ELOOP" });

/** Where `userPath` is: its directory, open, and its name there ("" for the root itself). */
export interface PlaceInRoot {
  directory: RootDirectory;
  name: string;
}

/**
 * Checks `userPath` with `resolveInRoot` and opens the directory it is in (see the top of this
 * file); with `create`, missing directories on the way are made. The caller closes it.
 */
export function openInRoot(
  root: string,
  userPath: string,
  options: { create?: boolean } = {},
): Result<PlaceInRoot> {
  const resolved = resolveInRoot(root, userPath);
  if (!resolved.ok) return resolved;
  try {
    const realRoot = realpathSync.native(root);
    // The root itself is opened as a file named "" in itself.
    const [directory, name] =
      resolved.value === realRoot
        ? [realRoot, ""]
        : [dirname(resolved.value), basename(resolved.value)];
    return ok({
      directory: RootDirectory.open(realRoot, directory, options.create === true),
      name,
    });
  } catch (error) {
    return err(fileError(error, userPath));
  }
}

/** A UTF-8 text file inside the root; directories, special, binary and oversized files are errors. */
export function readTextFile(root: string, userPath: string): Result<string> {
  const resolved = resolveInRoot(root, userPath);
  if (!resolved.ok) return resolved;
  let read: RegularRead;
  try {
    const { fd } = openInside(realpathSync.native(root), resolved.value, FILE);
    try {
      read = readOpenFile(fd, MAX_TEXT_FILE_BYTES + 1);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    return err(fileError(error, userPath));
  }
  return textOf(read, userPath);
}

/** `readTextFile` of a place already open, with the file's permission bits. */
export function readTextIn(
  { directory, name }: PlaceInRoot,
  userPath: string,
): Result<{ text: string; mode: number }> {
  let file: { read: RegularRead; mode: number };
  try {
    file = directory.readFile(name, MAX_TEXT_FILE_BYTES + 1);
  } catch (error) {
    return err(fileError(error, userPath));
  }
  const text = textOf(file.read, userPath);
  return text.ok ? ok({ text: text.value, mode: file.mode }) : text;
}
