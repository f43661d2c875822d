import type { GrantRequest, PolicyDecision } from "../compiler/stage-types.js";
import { TOOL_RULE } from "../definitions/pipeline-schema.js";

/**
 * Tool rules as people write them: `Bash`, `Bash(git status)`, `Bash(rm *)`, `Write(.env)`.
 * The part in parentheses is matched against the call's summary (the command, the path…);
 * `*` matches any run of characters, `/` included. Used by grant policies, guards and the
 * allowlist security mode.
 */
export interface ToolRule {
  source: string;
  tool: RegExp;
  args?: RegExp;
}

export function parseToolRule(source: string): ToolRule {
  const match = TOOL_RULE.exec(source.trim());
  if (!match?.[1])
    throw new Error(`not a tool rule: ${JSON.stringify(source)} (write Tool or Tool(pattern))`);
  return {
    source,
    tool: globToRegExp(match[1]),
    ...(match[2] !== undefined && { args: globToRegExp(match[2]) }),
  };
}

export function ruleMatches(rule: ToolRule, tool: string, argsSummary: string): boolean {
  return rule.tool.test(tool) && (rule.args === undefined || rule.args.test(argsSummary));
}

export function findMatchingRule(
  rules: readonly ToolRule[],
  tool: string,
  argsSummary: string,
): ToolRule | undefined {
  return rules.find((rule) => ruleMatches(rule, tool, argsSummary));
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`, "s");
}

/** A pipeline's `grants:` block: deny wins over approve; anything else goes to the interactors. */
export function rulesGrantPolicy(grants: {
  approve?: string[];
  deny?: string[];
}): (request: GrantRequest) => PolicyDecision {
  const approve = (grants.approve ?? []).map(parseToolRule);
  const deny = (grants.deny ?? []).map(parseToolRule);
  return ({ tool, argsSummary }) => {
    if (findMatchingRule(deny, tool, argsSummary)) return "deny";
    if (findMatchingRule(approve, tool, argsSummary)) return "approve";
    return "defer";
  };
}

export const deferEverything = (): PolicyDecision => "defer";
