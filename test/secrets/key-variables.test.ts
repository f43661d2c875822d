import { describe, expect, it } from "vitest";
import { environmentKeysRedactor, withoutProviderKeys } from "../../src/secrets/key-variables.js";

const env = {
  OPENAI_API_KEY: "sk-provider-key-1234",
  OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=hc-team-key-5678,x-tenant=acme%20corp%20ltd",
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: "authorization=Bearer%20trace-token-9abc",
  OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
  HOME: "/home/dev",
};

describe("the keys an environment holds", () => {
  it("are the provider keys and the values of the trace exporter's headers, as given and decoded", () => {
    const redact = environmentKeysRedactor(env);
    const text =
      "sk-provider-key-1234 hc-team-key-5678 acme corp ltd Bearer trace-token-9abc Bearer%20trace-token-9abc";
    const redacted = redact(text);
    for (const secret of [
      "sk-provider-key-1234",
      "hc-team-key-5678",
      "acme corp ltd",
      "trace-token-9abc",
    ])
      expect(redacted).not.toContain(secret);
  });

  it("are kept from the commands a model runs, with the variables that hold them; the rest is passed on", () => {
    const passed = withoutProviderKeys(env, environmentKeysRedactor(env));
    expect(Object.keys(passed).sort()).toEqual(["HOME", "OTEL_EXPORTER_OTLP_ENDPOINT"]);
  });
});
