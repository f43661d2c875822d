import { readFileSync } from "node:fs";

const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/**
 * The transactions the WAL of the store at `path` holds since its last reset: its frames of the
 * current generation (their salts are the header's) that end a commit (a nonzero database size).
 */
export function walCommits(path: string): number {
  const wal = readFileSync(`${path}-wal`);
  if (wal.length < WAL_HEADER) return 0;
  const pageSize = wal.readUInt32BE(8);
  const [salt1, salt2] = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  let commits = 0;
  for (let at = WAL_HEADER; at + FRAME_HEADER + pageSize <= wal.length; ) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits += 1;
    at += FRAME_HEADER + pageSize;
  }
  return commits;
}
