import { describe, expect, it } from "vitest";
import { StagechartError } from "../../../src/errors.js";
import { postgresFailure, retryingConflicts } from "../../../src/store/postgres/postgres-errors.js";

const url = "postgres://worker:pw-secret@db.example:5432/stagechart";
const failing = (message: string, code?: string) => Object.assign(new Error(message), { code });

describe("a failing PostgreSQL call", () => {
  it.each([
    ["an unreachable host", failing("connect EHOSTUNREACH 10.0.0.9:5432", "EHOSTUNREACH")],
    ["an unreachable network", failing("connect ENETUNREACH 10.0.0.9:5432", "ENETUNREACH")],
    ["a broken pipe", failing("write EPIPE", "EPIPE")],
    ["a pool that could not connect in time", failing("timeout exceeded when trying to connect")],
    ["a TLS handshake that failed", failing("The server does not support SSL connections")],
  ])("is Session/StoreUnavailable for %s, naming the store without its password", (_, cause) => {
    const failure = postgresFailure(url, cause);
    expect(failure).toBeInstanceOf(StagechartError);
    expect(failure).toMatchObject({ code: "Session/StoreUnavailable" });
    expect(JSON.stringify(failure)).not.toContain("pw-secret");
    expect((failure as StagechartError).message).toContain("db.example");
  });

  it("is left as it is when it is the store's own mistake", () => {
    const cause = failing('syntax error at or near "SELEC"', "42601");
    expect(postgresFailure(url, cause)).toBe(cause);
  });
});

describe("a transaction the server aborted as a conflict", () => {
  it.each([
    ["a deadlock", "40P01"],
    ["a serialization failure", "40001"],
  ])("is Session/StoreConflict for %s, naming the store without its password", (_, code) => {
    const failure = postgresFailure(url, failing("deadlock detected pw-secret", code));
    expect(failure).toMatchObject({ code: "Session/StoreConflict", context: { code } });
    expect(JSON.stringify(failure)).not.toContain("pw-secret");
  });

  it("is run again, and a conflict that persists is told as such", async () => {
    const conflict = () => postgresFailure(url, failing("deadlock detected", "40P01"));
    let attempts = 0;
    const once = await retryingConflicts(async () => {
      attempts += 1;
      if (attempts === 1) throw conflict();
      return "stored";
    });
    expect({ once, attempts }).toEqual({ once: "stored", attempts: 2 });
    await expect(
      retryingConflicts(async () => {
        throw conflict();
      }),
    ).rejects.toMatchObject({ code: "Session/StoreConflict" });
    const bug = failing('syntax error at or near "SELEC"', "42601");
    let tries = 0;
    await expect(
      retryingConflicts(async () => {
        tries += 1;
        throw bug;
      }),
    ).rejects.toBe(bug);
    expect(tries).toBe(1);
  });
});
