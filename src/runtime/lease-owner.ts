import { randomUUID } from "node:crypto";
import { readlinkSync } from "node:fs";
import { hostname } from "node:os";

/** How long a lease lives without renewal: a crashed owner blocks a run at most this long. */
export const LEASE_TTL_MS = 15_000;

/**
 * Unique per launch, so even two handles in one process cannot drive the same run:
 * `<host>:<pid namespace>:<pid>:<nonce>`. The namespace tells apart containers that share a
 * host name but not their process ids.
 */
export const leaseOwner = (pid = process.pid): string =>
  `${hostname()}:${ownPidNamespace()}:${pid}:${randomUUID().slice(0, 8)}`;

/** The inode of this process's pid namespace on Linux; "-" where there is none to read. */
let pidNamespace: string | undefined;
function ownPidNamespace(): string {
  if (pidNamespace === undefined) {
    try {
      pidNamespace = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "-";
    } catch {
      pidNamespace = "-";
    }
  }
  return pidNamespace;
}

/**
 * Whether a lease's owner is a process of this machine (and pid namespace) that has died —
 * killed, crashed: its run can be taken over at once instead of waiting for the lease to
 * expire. Owners elsewhere cannot be checked and are trusted until their lease expires.
 */
export function ownerIsGone(owner: string): boolean {
  const [host, namespace, pid] = owner.split(":");
  if (host !== hostname() || namespace !== ownPidNamespace()) return false;
  if (!pid || !/^\d+$/.test(pid) || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
