import { type Redactor, secretRedactor } from "./redact.js";

/** The environment variables each hosted provider reads: its key, and where it is served from. */
export const PROVIDER_SETTINGS = {
  openai: { key: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL", keyRequired: true },
  "openai-responses": { key: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL", keyRequired: true },
  anthropic: { key: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL", keyRequired: true },
  "openai-compatible": { key: "OPENAI_COMPATIBLE_API_KEY", baseURL: undefined, keyRequired: false },
} as const;

/** Where provider settings come from: the process environment unless a test passes its own. */
export type ModelEnv = Readonly<Record<string, string | undefined>>;

/** The variables that hold provider API keys: stagechart knows their values are secrets. */
export const PROVIDER_KEY_VARIABLES: readonly string[] = [
  ...new Set(Object.values(PROVIDER_SETTINGS).map((settings) => settings.key)),
];

/** Removes from a text the value of every provider key variable set in `env`. */
export const environmentKeysRedactor = (env: ModelEnv): Redactor =>
  secretRedactor([
    ...PROVIDER_KEY_VARIABLES.map((name) => (env[name]?.trim() ? env[name] : undefined)),
    ...exporterHeaderValues(env),
  ]);

/**
 * The values of the headers the trace exporter sends (`OTEL_EXPORTER_OTLP_HEADERS`,
 * `…_TRACES_HEADERS`: `name=value,…`, percent-encoded): a hosted backend's key, as secret as a
 * provider's.
 */
function exporterHeaderValues(env: ModelEnv): string[] {
  const values: string[] = [];
  for (const name of EXPORTER_HEADER_VARIABLES)
    for (const header of env[name]?.split(",") ?? []) {
      const value = header.slice(header.indexOf("=") + 1).trim();
      if (header.includes("=") && value) values.push(value, safeDecode(value));
    }
  return values;
}

const safeDecode = (value: string) => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

const EXPORTER_HEADER_VARIABLES = [
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
];

/**
 * The environment a command runs with: `env` without the provider keys stagechart knows —
 * neither their variables nor any other variable whose value holds a key `redact` removes (a
 * base URL with a key in its userinfo, say) — nor the shared store's or the trace exporter's
 * credentials. Everything else is passed on unchanged.
 */
export function withoutProviderKeys(env: ModelEnv, redact: Redactor): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined &&
        !PROVIDER_KEY_VARIABLES.includes(entry[0]) &&
        !STORE_CREDENTIAL_VARIABLES.test(entry[0]) &&
        redact(entry[1]) === entry[1],
    ),
  );
}

/**
 * The variables that reach the shared store (`STAGECHART_STORE`, libpq's `PG*`, the usual
 * `DATABASE_URL`) or carry the trace exporter's headers: a command a model runs must not read
 * the store's password or a tracing backend's key.
 */
const STORE_CREDENTIAL_VARIABLES =
  /^(STAGECHART_STORE|DATABASE_URL|PG[A-Z]+|OTEL_EXPORTER_OTLP_(TRACES_)?HEADERS)$/;
