import { describe, expect, it } from "vitest";
import { argsDigest } from "../../src/compiler/act-rules.js";
import { retryDelayMs } from "../../src/compiler/backoff.js";
import { consumeGrant, mintGrant } from "../../src/compiler/grants.js";
import type { ProposedCall } from "../../src/compiler/stage-types.js";

const call = (proposalId: string, args: Record<string, string>): ProposedCall => ({
  proposalId,
  toolCallId: proposalId,
  tool: "Edit",
  args,
  argsDigest: argsDigest(args),
  argsSummary: args.path ?? "",
});

describe("one-shot grants", () => {
  const edit = call("p1", { path: "src/auth.ts" });

  it("a minted grant is consumed once", () => {
    const ledger = mintGrant({}, edit);
    const consumed = consumeGrant(ledger, edit);
    expect(consumed.ok).toBe(true);
  });

  it("a consumed grant cannot be used again", () => {
    const consumed = consumeGrant(mintGrant({}, edit), edit);
    if (!consumed.ok) throw consumed.error;
    const again = consumeGrant(consumed.value, edit);
    expect(again.ok ? undefined : again.error.code).toBe("Validation/GrantAlreadyConsumed");
  });

  it("covers exactly its proposal: another proposal, or other arguments, has no grant", () => {
    const ledger = mintGrant({}, edit);
    const other = consumeGrant(ledger, call("p2", { path: "src/auth.ts" }));
    expect(other.ok ? undefined : other.error.code).toBe("Validation/GrantNotFound");
    const tampered = consumeGrant(ledger, { ...call("p1", { path: ".env" }) });
    expect(tampered.ok ? undefined : tampered.error.code).toBe("Validation/GrantMismatch");
  });
});

describe("retry backoff", () => {
  const policy = { maxAttempts: 5, delayMs: 100 };

  it("none waits nothing, fixed waits delayMs every time", () => {
    expect(retryDelayMs({ ...policy, backoff: "none" }, 3)).toBe(0);
    expect([1, 2, 3].map((a) => retryDelayMs({ ...policy, backoff: "fixed" }, a))).toEqual([
      100, 100, 100,
    ]);
  });

  it("exponential doubles from delayMs up to maxDelayMs", () => {
    const exponential = { ...policy, backoff: "exponential" as const, maxDelayMs: 350 };
    expect([1, 2, 3, 4].map((a) => retryDelayMs(exponential, a))).toEqual([100, 200, 350, 350]);
  });
});
