import { findMatchingRule, type ToolRule } from "./rules.js";

/**
 * The security mode decides tool calls that no stage envelope covers — calls code stages make
 * through the host. It never approves an out-of-envelope call inside an
 * LLM stage: those go through grants, in every mode.
 */
export const SECURITY_MODES = ["ask", "yolo", "allowlist"] as const;
export type SecurityMode = (typeof SECURITY_MODES)[number];

/** `ask` means: put the question to the interactors (and deny when there are none). */
export type ModeDecision =
  | { decision: "approve" }
  | { decision: "deny"; code: string }
  | { decision: "ask" };

export function decideByMode(
  mode: SecurityMode,
  allowlist: readonly ToolRule[],
  tool: string,
  argsSummary: string,
): ModeDecision {
  switch (mode) {
    case "yolo":
      return { decision: "approve" };
    case "allowlist":
      return findMatchingRule(allowlist, tool, argsSummary)
        ? { decision: "approve" }
        : { decision: "deny", code: "ToolTerminal/NotOnAllowlist" };
    case "ask":
      return { decision: "ask" };
  }
}
