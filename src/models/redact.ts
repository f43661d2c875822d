/** Replaces every secret a model handle holds in a text bound for the journal or audit log. */
export type Redactor = (text: string) => string;

const REDACTED = "[redacted]";

export function secretRedactor(secrets: readonly string[]): Redactor {
  const known = secrets.filter((secret) => secret.length > 0);
  return (text) => known.reduce((out, secret) => out.split(secret).join(REDACTED), text);
}

/** A URL without credentials or query string, where keys of some providers travel. */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const parsed = new URL(url);
  if (parsed.username || parsed.password) {
    parsed.username = "";
    parsed.password = "";
  }
  if (parsed.search) parsed.search = "";
  return parsed.toString();
}
