import { describe, expect, it } from "vitest";
import { parseToolRule, ruleMatches, rulesGrantPolicy } from "../../src/runtime/rules.js";
import { decideByMode } from "../../src/runtime/security-mode.js";

const request = (tool: string, argsSummary: string) => ({
  stageId: "execute",
  stageExecutionId: "r/execute/1",
  attempt: 1,
  proposalId: "p",
  tool,
  argsDigest: "d",
  argsSummary,
});

describe("tool rules", () => {
  it("a bare tool name matches every call of that tool", () => {
    const rule = parseToolRule("Bash");
    expect(ruleMatches(rule, "Bash", "rm -rf /")).toBe(true);
    expect(ruleMatches(rule, "Bashful", "x")).toBe(false);
  });

  it("a pattern in parentheses matches the call's summary, * spanning anything", () => {
    expect(ruleMatches(parseToolRule("Bash(git status)"), "Bash", "git status")).toBe(true);
    expect(ruleMatches(parseToolRule("Bash(git status)"), "Bash", "git status --porcelain")).toBe(
      false,
    );
    expect(ruleMatches(parseToolRule("Bash(rm *)"), "Bash", "rm -rf src/a/b")).toBe(true);
    expect(ruleMatches(parseToolRule("Write(*.env)"), "Write", "config/prod.env")).toBe(true);
    expect(ruleMatches(parseToolRule("Write(.env)"), "Write", "xenv")).toBe(false);
    expect(ruleMatches(parseToolRule("mcp__*"), "mcp__github__create_issue", "")).toBe(true);
  });

  it("a malformed rule is an error naming it", () => {
    expect(() => parseToolRule("Bash(unclosed")).toThrow(/not a tool rule/);
    expect(() => parseToolRule("")).toThrow(/not a tool rule/);
  });
});

describe("a pipeline's grants policy", () => {
  const policy = rulesGrantPolicy({ approve: ["Bash(git *)"], deny: ["Bash(git push*)"] });

  it("approves what it lists, denies what it denies (deny wins), defers the rest", () => {
    expect(policy(request("Bash", "git status"))).toBe("approve");
    expect(policy(request("Bash", "git push --force"))).toBe("deny");
    expect(policy(request("Bash", "ls"))).toBe("defer");
    expect(policy(request("Edit", "src/a.ts"))).toBe("defer");
  });
});

describe("security modes, for calls no envelope covers", () => {
  const allowlist = [parseToolRule("Bash(npm test)"), parseToolRule("Read")];

  it("yolo approves, ask asks, allowlist approves only what it lists", () => {
    expect(decideByMode("yolo", [], "Bash", "rm -rf /")).toEqual({ decision: "approve" });
    expect(decideByMode("ask", [], "Bash", "ls")).toEqual({ decision: "ask" });
    expect(decideByMode("allowlist", allowlist, "Bash", "npm test")).toEqual({
      decision: "approve",
    });
    expect(decideByMode("allowlist", allowlist, "Read", "anything")).toEqual({
      decision: "approve",
    });
    expect(decideByMode("allowlist", allowlist, "Bash", "npm publish")).toEqual({
      decision: "deny",
      code: "ToolTerminal/NotOnAllowlist",
    });
  });
});
