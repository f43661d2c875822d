import { StagechartError } from "../../errors.js";

/**
 * A store URL as it may be shown: scheme, user, host, port and database, never the password
 * (nor a query string, where `password=` or `sslkey=` may ride).
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${parsed.username}@` : "";
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
  } catch {
    return "a PostgreSQL URL that does not parse";
  }
}

/** Every form of the URL's password that could appear in a message. */
export function secretsOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    const inQuery = parsed.searchParams.get("password");
    return [parsed.password, decodeURIComponent(parsed.password), inQuery ?? ""].filter(
      (secret) => secret.length > 0,
    );
  } catch {
    return [url];
  }
}

const scrub = (text: string, secrets: readonly string[]): string =>
  secrets.reduce((scrubbed, secret) => scrubbed.split(secret).join("***"), text);

const messageOf = (cause: unknown): string =>
  cause instanceof Error ? cause.message : String(cause);

const codeOf = (cause: unknown): string | undefined => {
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};

/** SQLSTATE classes that mean the server cannot be used right now, not that a query is wrong. */
const UNAVAILABLE_STATES = ["08", "28", "3D", "53", "57", "58"];
/** Errors of the connection itself, before the server answers. */
const NETWORK_CODES = [
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
];

/** SQLSTATEs of a transaction the server aborted as it conflicted with another: a deadlock, a serialization failure. */
const CONFLICT_STATES = ["40P01", "40001"];

/** A transaction aborted for conflicting with another: rolled back whole, so it may be run again. */
export const isConflict = (failure: unknown): boolean =>
  failure instanceof StagechartError
    ? failure.code === "Session/StoreConflict"
    : CONFLICT_STATES.includes(codeOf(failure) ?? "");

/** Runs a transaction again while the server aborts it as a conflict, `attempts` times in all. */
export async function retryingConflicts<T>(
  transaction: () => Promise<T>,
  attempts = 3,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (failure) {
      if (attempt >= attempts || !isConflict(failure)) throw failure;
    }
  }
}

/** A store that cannot be reached or opened, naming it without its password. */
export const postgresUnavailable = (url: string, cause: unknown): StagechartError =>
  new StagechartError(
    "Session/StoreUnavailable",
    `cannot use the store at ${redactUrl(url)}: ${scrub(messageOf(cause), secretsOf(url))}`,
    { store: redactUrl(url), ...(codeOf(cause) && { code: codeOf(cause) }) },
  );

/**
 * What a failing PostgreSQL call means for the user, as the SQLite store tells it: data the
 * server finds damaged is `Session/StoreCorrupt`, a server that is gone, full, refusing or
 * shutting down `Session/StoreUnavailable`, a transaction it aborted as a deadlock or a
 * serialization failure `Session/StoreConflict` (nothing of it stored: it may be tried again),
 * each naming the store without its password. The
 * store's own errors and its mistakes (a constraint, an SQL error) are left as they are: bugs.
 */
export function postgresFailure(url: string, cause: unknown): unknown {
  if (cause instanceof StagechartError) return cause;
  const code = codeOf(cause) ?? "";
  if (code === "XX001" || code === "XX002") {
    return new StagechartError(
      "Session/StoreCorrupt",
      `the store at ${redactUrl(url)} is damaged: ${scrub(messageOf(cause), secretsOf(url))}`,
      { store: redactUrl(url), code },
    );
  }
  if (isConflict(cause)) {
    return new StagechartError(
      "Session/StoreConflict",
      `the store at ${redactUrl(url)} aborted a call that conflicted with another (nothing of it was stored; try again): ${scrub(messageOf(cause), secretsOf(url))}`,
      { store: redactUrl(url), code },
    );
  }
  const lostConnection =
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|SSL|TLS/i.test(
      messageOf(cause),
    );
  if (
    UNAVAILABLE_STATES.some((state) => code.startsWith(state)) ||
    NETWORK_CODES.includes(code) ||
    lostConnection
  ) {
    return postgresUnavailable(url, cause);
  }
  return cause;
}
