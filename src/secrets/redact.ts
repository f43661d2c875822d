import type { LanguageModelV3Content } from "@ai-sdk/provider";
import { mapStrings } from "./map-strings.js";

/** Replaces every secret a model handle holds in a text bound for the journal or audit log. */
export type Redactor = (text: string) => string;

const REDACTED = "[redacted]";

/**
 * Keys shorter than this are not looked for in text. Local servers take placeholders (`ollama`,
 * `EMPTY`, `k`) that are no secret, and replacing every occurrence of one in a model's reply or a
 * tool's output corrupts it (`{"kind": …}` → `{"[redacted]ind": …}`); a key issued by a provider
 * is far longer.
 */
export const MIN_SECRET_LENGTH = 8;

export function secretRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const known = [...new Set(secrets)].filter(
    (secret): secret is string => secret !== undefined && secret.length >= MIN_SECRET_LENGTH,
  );
  if (known.length === 0) return (text) => text;
  return (text) => known.reduce((out, secret) => out.split(secret).join(REDACTED), text);
}

/** A model handle's redactor; a model without secrets has none, and changes nothing. */
export const redactorOf = (handle: { redact?: Redactor }): Redactor =>
  handle.redact ?? ((text) => text);

/** A URL without credentials or query string, where keys of some providers travel. */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return withoutUrlCredentials(url);
  const parsed = new URL(url);
  parsed.username = "";
  parsed.password = "";
  parsed.search = "";
  return parsed.toString();
}

/**
 * A text with the `user:password@` of every URL in it removed — also of URLs too malformed to
 * parse — so that a spec or message naming a server never carries its credentials.
 */
export const withoutUrlCredentials = (text: string): string =>
  text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/?#\s]*@/gi, "$1");

/** A base URL split into the URL without credentials and the key its userinfo carried. */
export interface UrlWithKey {
  url: string;
  /** The password, or the user name when there is no password. */
  key?: string;
}

export function splitUrlKey(url: string): UrlWithKey {
  if (!URL.canParse(url)) return { url };
  const parsed = new URL(url);
  const key = decoded(parsed.password || parsed.username);
  return key === "" ? { url } : { url: withoutUrlCredentials(url), key };
}

function decoded(userinfo: string): string {
  try {
    return decodeURIComponent(userinfo);
  } catch {
    return userinfo;
  }
}

/**
 * A reply's content with the model's secrets removed from every text, tool-call argument and
 * other string it holds: a server that echoes the key must not get it journaled or recorded.
 */
export function redactContent(
  content: readonly LanguageModelV3Content[],
  redact: Redactor,
): LanguageModelV3Content[] {
  return content.map((part) => redactStrings(part, redact));
}

/** A JSON-like value with `redact` applied to every string in it, keys excepted (see `mapStrings`). */
export const redactStrings = <T>(value: T, redact: Redactor): T => mapStrings(value, redact);
