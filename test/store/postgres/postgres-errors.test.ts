import { describe, expect, it } from "vitest";
import { postgresUnavailable, redactUrl } from "../../../src/store/postgres/postgres-errors.js";

describe("a store URL as shown", () => {
  it("keeps the user, host, port and database, never the password nor the query string", () => {
    expect(redactUrl("postgres://app:s3cret@db.internal:5433/runs")).toBe(
      "postgres://app@db.internal:5433/runs",
    );
    expect(redactUrl("postgresql://db/runs?password=s3cret&sslmode=require")).toBe(
      "postgresql://db/runs",
    );
    expect(redactUrl("not a url s3cret")).toBe("a PostgreSQL URL that does not parse");
  });

  it("is how an error names the store; the password is scrubbed from the cause's message", () => {
    const url = "postgres://app:p%40ss@db:5432/runs";
    const error = postgresUnavailable(url, new Error("auth failed for p@ss and p%40ss"));
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.message).toBe(
      "cannot use the store at postgres://app@db:5432/runs: auth failed for *** and ***",
    );
    expect(error.context).toEqual({ store: "postgres://app@db:5432/runs" });
  });
});
