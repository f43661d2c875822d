import { argsDigest } from "../compiler/act-rules.js";
import type { CodeStageInput } from "../compiler/pipeline-context.js";
import { viewOf } from "../compiler/stage-entries.js";
import type {
  JsonValue,
  StageContext,
  StageResult,
  ToolCallResult,
} from "../definitions/contract.js";
import type { PipelineStage } from "../definitions/pipeline-types.js";
import type { ErrorCode } from "../errors.js";
import type { AuditEventInput } from "../events/audit.js";
import { elapsedMs, type Host } from "./host.js";
import { invokeHostTool } from "./host-tools.js";
import { askInteractors, grantAnswerers } from "./interactors.js";
import { findMatchingRule } from "./rules.js";
import { decideByMode } from "./security-mode.js";

type CodeStage = Extract<PipelineStage, { kind: "code" | "command" }>;

const TAIL_CHARS = 4000;

/**
 * Runs a stage without an LLM: a TypeScript function, or a command through the Bash tool. Its
 * tool calls are covered by no stage envelope, so the security mode decides them, then the
 * guard rules.
 */
export async function runCodeStage(
  host: Host,
  stage: CodeStage,
  input: CodeStageInput,
  signal: AbortSignal,
): Promise<StageResult> {
  const audit = (type: AuditEventInput["type"], payload: Record<string, unknown>) =>
    host.audit.emit({
      type,
      runId: input.runId,
      stageId: stage.id,
      stageExecutionId: input.stageExecutionId,
      attempt: 1,
      payload,
    });
  const ctx: StageContext = Object.freeze({
    ...input.ctx,
    upstream: input.upstream,
    workflowRunId: input.runId,
    stageExecutionId: input.stageExecutionId,
    stagesBefore: input.stagesBefore ?? 0,
    ...(input.override && { override: input.override }),
  });
  audit("StageSetup", { kind: stage.kind, upstream: input.upstream.length });
  let calls = 0;
  const callTool = (tool: string, args: Record<string, unknown>) =>
    callHostTool(
      host,
      input,
      `${input.stageExecutionId}/code/c${calls++}`,
      tool,
      args,
      signal,
      audit,
    );

  let outcome: { verdict: StageResult["verdict"]; reason?: string; output?: JsonValue };
  try {
    outcome =
      stage.kind === "command"
        ? await runCommand(stage, callTool)
        : await stage.run({ ctx, callTool, signal, memory: host.memory });
  } catch (error) {
    if (signal.aborted) throw error;
    outcome = { verdict: "fail", reason: error instanceof Error ? error.message : String(error) };
  }
  if (signal.aborted) throw signal.reason;
  const result: StageResult = {
    stageId: stage.id,
    stageExecutionId: input.stageExecutionId,
    verdict: outcome.verdict,
    ...(outcome.reason !== undefined && { reason: outcome.reason }),
    ...(outcome.output !== undefined && { output: outcome.output }),
    capHit: false,
    attemptCount: 1,
  };
  // Its StageExited is audited by the pipeline's transition that records this result, so that
  // one step commits both (see `codeExitEvent`).
  return result;
}

/** A command stage run through the Bash tool: ok when it exits 0, with its exit code and output tails. */
export async function runCommand(
  stage: Extract<CodeStage, { kind: "command" }>,
  callTool: (tool: string, args: Record<string, unknown>) => Promise<ToolCallResult>,
) {
  const ran = await callTool("Bash", { command: stage.command, timeoutMs: stage.timeoutMs });
  if (!ran.ok) return { verdict: "fail" as const, reason: ran.error.message };
  const { exitCode, stdout, stderr } = ran.output as {
    exitCode: number;
    stdout: string;
    stderr: string;
  };
  return {
    verdict: exitCode === 0 ? ("ok" as const) : ("fail" as const),
    ...(exitCode !== 0 && { reason: `\`${stage.command}\` exited with ${exitCode}` }),
    output: {
      exitCode,
      stdoutTail: stdout.slice(-TAIL_CHARS),
      stderrTail: stderr.slice(-TAIL_CHARS),
    },
  };
}

async function callHostTool(
  host: Host,
  input: CodeStageInput,
  proposalId: string,
  toolName: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
  audit: (type: AuditEventInput["type"], payload: Record<string, unknown>) => void,
): Promise<ToolCallResult> {
  const tool = host.tools.get(toolName);
  const argsSummary = tool ? tool.summarize(args) : JSON.stringify(args);
  const call = {
    proposalId,
    tool: toolName,
    argsDigest: argsDigest(args as JsonValue),
    argsSummary,
  };
  audit("ToolProposed", call);
  const refuse = (
    source: string,
    code: Extract<ErrorCode, `ToolTerminal/${string}`>,
    message: string,
  ): ToolCallResult => {
    audit("ToolDenied", { ...call, source, code });
    return { ok: false, error: viewOf(code, message, { tool: toolName }) };
  };
  if (!tool)
    return refuse("registry", "ToolTerminal/UnknownTool", `there is no tool named "${toolName}"`);

  const decision = decideByMode(host.mode, host.allowlist, toolName, argsSummary);
  if (decision.decision === "deny")
    return refuse(
      "mode",
      "ToolTerminal/NotOnAllowlist",
      `${toolName}(${argsSummary}) is not on the allowlist`,
    );
  if (decision.decision === "ask") {
    if (grantAnswerers(host.interactors).length === 0) {
      return refuse(
        "headless",
        "ToolTerminal/NoInteractor",
        `nobody can approve ${toolName}(${argsSummary}) (headless, mode ask)`,
      );
    }
    const request = {
      stageId: input.stageId,
      stageExecutionId: input.stageExecutionId,
      attempt: 1,
      ...call,
    };
    const answer = await askInteractors(host.interactors, request, signal).catch(
      () => "deny" as const,
    );
    if (answer !== "approve")
      return refuse(
        "interactor",
        "ToolTerminal/GrantDenied",
        `the user denied ${toolName}(${argsSummary})`,
      );
  }
  audit("ToolApproved", { ...call, source: "mode" });
  const guard = findMatchingRule(host.guards, toolName, argsSummary);
  if (guard)
    return refuse("guard", "ToolTerminal/GuardDenied", `denied by the guard rule ${guard.source}`);

  if (host.journal.durable) await host.journal.durable();
  const started = host.clock.now();
  const outcome = await invokeHostTool(host, tool, args, signal);
  const durationMs = elapsedMs(host, started);
  if (outcome.ok) {
    audit("ToolSucceeded", { ...call, durationMs });
    return { ok: true, output: outcome.output };
  }
  audit("ToolFailed", { ...call, code: outcome.error.code, durationMs });
  return { ok: false, error: outcome.error.toModelView() };
}
