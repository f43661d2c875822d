import { execFile as execFileCallback, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";

const execFile = promisify(execFileCallback);

/** Where Debian's `postgresql` package puts its server binaries, one folder per major version. */
const DEBIAN_POSTGRES = "/usr/lib/postgresql";

/** The role the tests connect as; its password travels in every URL they use. */
const TEST_ROLE = "stagechart";

export type PostgresBinaries = { bin: string } | { missing: string };

/** The newest installed server's bin folder, or why there is none. */
export function postgresBinaries(): PostgresBinaries {
  const versions = existsSync(DEBIAN_POSTGRES)
    ? readdirSync(DEBIAN_POSTGRES)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const version of versions) {
    const bin = join(DEBIAN_POSTGRES, version, "bin");
    if (existsSync(join(bin, "initdb")) && existsSync(join(bin, "pg_ctl"))) return { bin };
  }
  return { missing: `no PostgreSQL server under ${DEBIAN_POSTGRES} (apt-get install postgresql)` };
}

/** A PostgreSQL server of the tests' own, in a temporary directory. */
export interface TestPostgres {
  host: string;
  port: number;
  /** The test role's password, which must never show up in an error or a stored row. */
  password: string;
  /** A new empty database, as a URL with the role's password in it. */
  createDatabase(): Promise<string>;
  /**
   * Stops the server, keeps it down for `downMs`, and starts it again on the same port with the
   * same data. `fast` ends every session with a message, as a restart for maintenance does;
   * `immediate` drops them unannounced, as a crash does.
   */
  restart(downMs: number, mode?: "fast" | "immediate"): Promise<void>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

/**
 * `initdb` and `postgres` refuse to run as root: as root the server runs as the `postgres`
 * user the Debian package creates (or `nobody`), through runuser.
 */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    try {
      const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }));
      const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }));
      return { name, uid, gid };
    } catch {
      // Try the next one.
    }
  }
  throw new Error("running as root, and neither a postgres nor a nobody user to run PostgreSQL");
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Starts a throwaway server: data, socket and log in a fresh temporary directory, TCP on a free
 * loopback port with password authentication (so URLs carry a secret), fsync off.
 */
export async function startPostgres(bin: string): Promise<TestPostgres> {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-pg-"));
  const user = serverUser();
  if (user) chownSync(dir, user.uid, user.gid);
  const asServer = (command: string, args: string[]) =>
    user
      ? execFile("runuser", ["-u", user.name, "--", join(bin, command), ...args])
      : execFile(join(bin, command), args);

  const password = randomBytes(12).toString("hex");
  const pwfile = join(dir, "pwfile");
  writeFileSync(pwfile, password);
  chmodSync(pwfile, 0o600);
  if (user) chownSync(pwfile, user.uid, user.gid);

  const data = join(dir, "data");
  const host = "127.0.0.1";
  const port = await freePort();
  const settings = `-p ${port} -k ${dir} -c listen_addresses=${host} -c fsync=off`;
  const start = () =>
    asServer("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-o", settings, "start"]);
  try {
    await asServer("initdb", [
      ...["-D", data, "-U", TEST_ROLE, `--pwfile=${pwfile}`, "-E", "UTF8", "--no-sync"],
      ...["--auth-local=trust", "--auth-host=scram-sha-256"],
    ]);
    rmSync(pwfile);
    await start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const urlOf = (database: string) =>
    `postgres://${TEST_ROLE}:${password}@${host}:${port}/${database}`;
  let databases = 0;
  return {
    host,
    port,
    password,
    async createDatabase() {
      databases += 1;
      const name = `test_${databases}`;
      const admin = new pg.Client({ connectionString: urlOf("postgres") });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return urlOf(name);
    },
    async restart(downMs, mode = "fast") {
      await asServer("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
      await new Promise((later) => setTimeout(later, downMs));
      await start();
    },
    async stop() {
      try {
        await asServer("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Skipped only on a machine without PostgreSQL; CI installs it (.ci/run), where this fails instead. */
export const noPostgres = "missing" in postgresBinaries() && process.env.CI !== "true";

/**
 * A PostgreSQL server for the file's tests, started before them and stopped after them: the
 * function gives it while they run.
 */
export function testPostgres(): () => TestPostgres {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    if (noPostgres) return;
    const binaries = postgresBinaries();
    if ("missing" in binaries) throw new Error(binaries.missing);
    server = await startPostgres(binaries.bin);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error("no PostgreSQL server: its tests should have been skipped");
    return server;
  };
}
