import { spawnSync } from "node:child_process";
import { lstatSync, readdirSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const SANDBOX_MODES = ["required", "auto", "off"] as const;
/**
 * `required`: Bash runs only inside the sandbox and is refused where it cannot be used;
 * `auto`: the same, unless the host allows unconfined Bash, which then runs unconfined where the
 * sandbox cannot be used; `off`: unconfined.
 */
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** How the host wants Bash confined. */
export interface SandboxSettings {
  mode: SandboxMode;
  /** Sandboxed commands share the host's network; by default they have none. */
  network: boolean;
  /** The bubblewrap binary: a name looked up on PATH, or a path. */
  bwrap: string;
  /**
   * In mode `auto`, where bubblewrap cannot run, Bash runs unconfined instead of being refused.
   * A boundary must not vanish unasked, so only an explicit choice turns this on.
   */
  allowUnconfined: boolean;
}

export const DEFAULT_SANDBOX: SandboxSettings = {
  mode: "auto",
  network: false,
  bwrap: "bwrap",
  allowUnconfined: false,
};

/** How Bash runs on this host: inside bubblewrap, or not and why not, unconfined or refused. */
export type BashConfinement =
  | { sandboxed: true; bwrap: string; network: boolean }
  | { sandboxed: false; mode: SandboxMode; reason: string; bash: "unconfined" | "refused" };

/** Settles how Bash runs, trying bubblewrap (once per binary and network setting) unless off. */
export function bashConfinement(settings: SandboxSettings): BashConfinement {
  if (settings.mode === "off") {
    return {
      sandboxed: false,
      mode: "off",
      reason: "the host turned the sandbox off",
      bash: "unconfined",
    };
  }
  const problem = bubblewrapProblem(settings.bwrap, settings.network);
  if (problem === undefined) {
    return { sandboxed: true, bwrap: settings.bwrap, network: settings.network };
  }
  const unconfined = settings.mode === "auto" && settings.allowUnconfined;
  return {
    sandboxed: false,
    mode: settings.mode,
    reason: problem,
    bash: unconfined ? "unconfined" : "refused",
  };
}

/** Why Bash is refused under `confinement`, and what would let it run. */
export function refusalMessage(confinement: { mode: SandboxMode; reason: string }): string {
  const install =
    "Install bubblewrap (e.g. `apt-get install bubblewrap`) where it can create user namespaces";
  if (confinement.mode === "required") {
    return `Bash is refused: the host requires the bubblewrap sandbox, and ${confinement.reason}. ${install}`;
  }
  return (
    `Bash is refused: it runs only in the bubblewrap sandbox, and ${confinement.reason}. ` +
    `${install}, or allow Bash to run unconfined, able to read and write anything this user can ` +
    "(--unconfined-bash, STAGECHART_UNCONFINED_BASH=1, or sandbox.allowUnconfined in createHost)"
  );
}

const probed = new Map<string, string | undefined>();

/** Why bubblewrap cannot run a trivial command with the flags Bash uses, or undefined if it can. */
function bubblewrapProblem(bwrap: string, network: boolean): string | undefined {
  const key = `${bwrap}\0${network}`;
  if (!probed.has(key)) probed.set(key, tryBubblewrap(bwrap, network));
  return probed.get(key);
}

function tryBubblewrap(bwrap: string, network: boolean): string | undefined {
  const probe = spawnSync(bwrap, [...bwrapArguments(tmpdir(), network), "--", "true"], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 10_000,
    encoding: "utf8",
  });
  const code = (probe.error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return `bubblewrap (${bwrap}) is not installed`;
  if (probe.error) return `bubblewrap (${bwrap}) could not be started: ${probe.error.message}`;
  if (probe.status === 0) return undefined;
  const said = probe.stderr.trim().split("\n")[0] || `exit code ${probe.status ?? probe.signal}`;
  return `bubblewrap (${bwrap}) cannot create a sandbox here (user namespaces may be disabled): ${said}`;
}

/**
 * What a sandboxed command sees: the system directories read-only (`/usr`, `/etc`, `/opt` and
 * the `/bin`, `/sbin`, `/lib*` links or directories beside them), fresh `/proc` and `/dev`, a
 * private empty `/tmp`, and the project root read-write at its own path, as its working
 * directory. Nothing else of the host: no home, no other projects, no `/var`, `/run` or `/sys`.
 * Run as root, what in `/etc` only root may read (`shadow`, private keys) is hidden as well.
 * Every namespace is new (no network unless allowed, no view of the host's processes), and no
 * capability is kept, so it cannot mount its way out. It dies with the process that started it.
 */
export function bwrapArguments(root: string, network: boolean): string[] {
  return [
    "--unshare-all",
    ...(network ? ["--share-net"] : []),
    "--die-with-parent",
    "--cap-drop",
    "ALL",
    ...systemView(),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--bind",
    root,
    root,
    "--chdir",
    root,
  ];
}

const SYSTEM_DIRECTORIES = ["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt"];

let systemViewArguments: string[] | undefined;

/** The system directories, read-only; on merged-/usr systems `/bin` and the like are links. */
function systemView(): string[] {
  systemViewArguments ??= [...systemDirectories(), ...hiddenFromRoot("/etc")];
  return systemViewArguments;
}

function systemDirectories(): string[] {
  return SYSTEM_DIRECTORIES.flatMap((name) => {
    const path = `/${name}`;
    try {
      const entry = lstatSync(path);
      if (entry.isSymbolicLink()) return ["--symlink", readlinkSync(path), path];
      return entry.isDirectory() ? ["--ro-bind", path, path] : [];
    } catch {
      return [];
    }
  });
}

/**
 * Covers what under `directory` others may not read, so a sandbox run as root (which keeps no
 * capability, but owns these files) sees no more than any user would: such a file reads as
 * /dev/null (and is refused), such a directory is empty.
 */
function hiddenFromRoot(directory: string): string[] {
  if (process.getuid?.() !== 0) return [];
  let entries: string[];
  try {
    entries = readdirSync(directory);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(directory, name);
    try {
      const entry = lstatSync(path);
      const othersRead = (entry.mode & 0o004) !== 0;
      if (entry.isDirectory()) return othersRead ? hiddenFromRoot(path) : ["--tmpfs", path];
      return entry.isFile() && !othersRead ? ["--ro-bind", "/dev/null", path] : [];
    } catch {
      return [];
    }
  });
}
