import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/*
 * Vitest's global setup: everything the suite writes to the temporary directory (projects,
 * stores, caches, the PostgreSQL servers' data, what the CLI processes it starts write) goes
 * under one directory of its own, removed when the suite ends. Tests make their directories
 * with os.tmpdir(), which TMPDIR sets for the test workers and every process they start; left
 * in /tmp, a few runs of the suite filled the disk.
 */

let dir: string | undefined;

export function setup(): void {
  dir = mkdtempSync(join(tmpdir(), "stagechart-suite-"));
  // Traversable by the PostgreSQL server's own user, which the tests run it as when they are root.
  chmodSync(dir, 0o755);
  process.env.TMPDIR = dir;
}

export function teardown(): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}
