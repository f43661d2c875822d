import pc from "picocolors";
import type { AuditEvent } from "../events/audit.js";

const COLOURED = pc.createColors(true);
const PLAIN = pc.createColors(false);

/** Colour functions that colour, or return their text as it is. */
export const paintFor = (colour: boolean) => (colour ? COLOURED : PLAIN);

/**
 * One line per audit event, for people watching a run: the stage, what happened, and the
 * detail that matters (tool and arguments, approval source, verdict), coloured when `colour`.
 */
export function progressLine(event: AuditEvent, colour: boolean): string | undefined {
  const p = event.payload;
  const paint = paintFor(colour);
  const stage = event.stageId ? `${paint.cyan(event.stageId)} ` : "";
  const call = `${String(p.tool)}(${String(p.argsSummary ?? "")})`;
  switch (event.type) {
    case "RunStarted":
      return `${paint.bold("run")} ${event.runId} · ${String(p.pipelineId)}`;
    case "StageSetup":
      return `${stage}started (${event.stageExecutionId})`;
    case "ModelTurn":
      return p.outcome === "error"
        ? `${stage}turn ${String(p.turn)} · ${paint.yellow("provider error")} ${String((p.error as { message?: string })?.message ?? "")}`
        : `${stage}turn ${String(p.turn)} · ${describeTurn(p)}`;
    case "ToolApproved":
      return `${stage}  ${call} approved (${String(p.source)})`;
    case "ToolDenied":
      return `${stage}  ${call} ${paint.red("denied")} (${String(p.source)}: ${String(p.code)})`;
    case "GrantRequested":
      return `${stage}  ${call} is outside the stage's tools: asking`;
    case "ToolSucceeded":
      return `${stage}  ${call} ok`;
    case "ToolFailed":
      return `${stage}  ${call} ${paint.yellow("failed")} ${String(p.code ?? "")}`;
    case "CompletionRejected":
      return `${stage}  completion rejected (${String(p.reason)}${p.message === undefined ? "" : `: ${String(p.message)}`})`;
    case "Steered":
      return `${stage}  steered toward ${String(p.completionTool)}`;
    case "CapHit":
      return `${stage}${paint.yellow("turn cap hit")} (${String(p.turnCap)})`;
    case "StageRetry":
      return `${stage}retry ${String(p.nextAttempt)}/${String(p.maxAttempts)}: ${String(p.reason ?? "")}`;
    case "StageExited":
      return `${stage}${verdictText(String(p.verdict), colour)}${p.reason ? ` · ${String(p.reason)}` : ""}`;
    case "StageCancelled":
      return `${stage}${paint.yellow("cancelled")} · ${String(p.reason ?? "")}`;
    case "RunReopened":
      return `${paint.bold("run")} ${event.runId} reopened at ${String(p.stage)} by ${String(p.by)}: ${String(p.reason)}`;
    case "SMTransition":
      return `${paint.dim(`→ ${String(p.from)} → ${String(p.to)} (${String(p.kind)})`)}`;
    case "OverrideApplied":
      return `override ${String(p.from)} → ${String(p.to)}: ${String(p.reason)}`;
    case "RunCompleted":
    case "RunFailed":
    case "RunCancelled":
      return `${paint.bold("run")} ${event.runId} ${verdictText(String(p.status), colour)}${
        p.error
          ? ` · ${String((p.error as { code?: string; message?: string }).code)}: ${String((p.error as { message?: string }).message)}`
          : ""
      }`;
    default:
      return undefined;
  }
}

function describeTurn(p: Record<string, unknown>): string {
  const tools = (p.tools as string[] | undefined) ?? [];
  switch (p.outcome) {
    case "text":
      return "plain text";
    case "completion":
      return `${tools[0]} accepted`;
    default:
      return tools.length > 0 ? `calls ${tools.join(", ")}` : String(p.outcome);
  }
}

function verdictText(verdict: string, colour: boolean): string {
  const paint = paintFor(colour);
  if (verdict === "ok" || verdict === "done") return paint.green(verdict);
  return verdict === "skip" ? paint.dim(verdict) : paint.red(verdict);
}
