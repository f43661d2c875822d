import type { AuditEvent } from "../../src/events/audit.js";
import type { Step } from "../../src/inspect/steps.js";
import { clock, h } from "./dom.js";

/** One line of what an audit event says, without the payload's content. */
export function summary(e: AuditEvent): string {
  const p = e.payload as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.join(" + ") : String(v));
  switch (e.type) {
    case "SMTransition":
      return `${list(p.from)} → ${list(p.to)} (${p.kind})`;
    case "ModelTurn":
      return `turn ${p.turn} · ${p.outcome}${Array.isArray(p.tools) && p.tools.length ? ` ${p.tools.join(", ")}` : ""}`;
    case "ToolProposed":
    case "ToolSucceeded":
    case "GrantRequested":
    case "GrantIssued":
    case "GrantConsumed":
      return `${p.tool}(${p.argsSummary ?? ""})`;
    case "ToolApproved":
      return `${p.tool}(${p.argsSummary ?? ""}) · ${p.source}`;
    case "ToolDenied":
      return `${p.tool}(${p.argsSummary ?? ""}) · ${p.source} · ${p.code}`;
    case "ToolFailed":
      return `${p.tool}(${p.argsSummary ?? ""}) · ${(p.error as { code?: string } | undefined)?.code ?? ""}`;
    case "StageExited":
    case "StageAssertOutcome":
      return `${p.verdict}${p.reason ? ` · ${p.reason}` : ""}`;
    case "CheckGateOutcome":
      return String(p.resolution ?? p.answer ?? "");
    case "RunFailed":
    case "RunCancelled":
      return (p.error as { code?: string } | undefined)?.code ?? String(p.status ?? "");
    case "RunSuspended":
      return String(p.reason ?? "");
    case "CompletionRejected":
      return String(p.reason ?? "");
    case "StageRetry":
      return `attempt ${e.attempt ?? ""}${p.reason ? ` · ${p.reason}` : ""}`;
    default:
      return "";
  }
}

const KIND: Record<string, string> = {
  RunStarted: "run",
  RunResumed: "run",
  RunSuspended: "warn",
  RunCompleted: "ok",
  RunFailed: "bad",
  RunCancelled: "bad",
  StageExited: "stage",
  StageCancelled: "bad",
  StageInitFailed: "bad",
  ToolDenied: "warn",
  ToolFailed: "bad",
  GrantRequested: "warn",
  CapHit: "warn",
  StageRetry: "warn",
  CompletionRejected: "warn",
  ParallelSiblingFailure: "bad",
  SMTransition: "move",
  OverrideApplied: "move",
};

/** A timeline row picked: its event's seq, and the stage execution it belongs to, if any. */
export interface PickedRow {
  seq: number;
  stageId?: string;
  stageExecutionId?: string;
}

/** What the timeline shows: one stage's events, one event type's, or (undefined) all. */
export interface TimelineFilter {
  stage?: string;
  type?: string;
}

/**
 * The audit timeline: one row per event, `data-seq` on each; rows after the shown step dimmed.
 * A row clicked is marked `picked` and told to the page.
 */
export class Timeline {
  readonly element = h("div", { class: "timeline" });
  private readonly body = h("tbody");
  private readonly seen = new Set<number>();
  private onPick: (row: PickedRow) => void = () => {};
  private picked: Element | undefined;
  private filter: TimelineFilter = {};

  constructor() {
    this.element.append(
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", {}, "#"),
            h("th", {}, "time"),
            h("th", {}, "event"),
            h("th", {}, "stage"),
            h("th", {}, "what"),
          ),
        ),
        this.body,
      ),
    );
  }

  pick(listener: (row: PickedRow) => void): void {
    this.onPick = listener;
  }

  add(events: readonly AuditEvent[]): void {
    // One insertion for all new rows; seen seqs in a set (a selector per row made 1,000 rows slow).
    const rows = document.createDocumentFragment();
    for (const e of events) {
      if (this.seen.has(e.seq)) continue;
      this.seen.add(e.seq);
      const row = h(
        "tr",
        {
          "data-seq": e.seq,
          "data-type": e.type,
          "data-stage": e.stageId,
          class: `kind-${KIND[e.type] ?? "plain"} pickable`,
        },
        h("td", { class: "seq" }, e.seq),
        h("td", { class: "at" }, clock(e.at)),
        h("td", { class: "type" }, e.type),
        h("td", { class: "who" }, e.stageExecutionId ?? ""),
        h("td", { class: "what" }, summary(e)),
      );
      const picked: PickedRow = {
        seq: e.seq,
        ...(e.stageId && { stageId: e.stageId }),
        ...(e.stageExecutionId && { stageExecutionId: e.stageExecutionId }),
      };
      row.addEventListener("click", () => {
        this.picked?.classList.remove("picked");
        row.classList.add("picked");
        this.picked = row;
        this.onPick(picked);
      });
      row.hidden = !this.shows(row);
      rows.append(row);
    }
    this.body.append(rows);
  }

  /** Hides the rows the filter leaves out. */
  setFilter(filter: TimelineFilter): void {
    this.filter = filter;
    for (const row of this.body.children as HTMLCollectionOf<HTMLElement>)
      row.hidden = !this.shows(row);
  }

  private shows(row: HTMLElement): boolean {
    const { stage, type } = this.filter;
    return (
      (stage === undefined || row.dataset.stage === stage) &&
      (type === undefined || row.dataset.type === type)
    );
  }

  /** Dims the rows after `lastSeq` (a replayed step); none when undefined (live). */
  upTo(lastSeq: number | undefined): void {
    for (const row of this.body.children) {
      const seq = Number(row.getAttribute("data-seq"));
      row.classList.toggle("future", lastSeq !== undefined && seq > lastSeq);
    }
    const last = [...(this.body.children as HTMLCollectionOf<HTMLElement>)]
      .filter((r) => !r.hidden && !r.classList.contains("future"))
      .at(-1);
    last?.scrollIntoView({ block: "nearest" });
  }
}

/** How each stage ended last, from the events up to `lastSeq`. */
export function outcomesOf(
  events: readonly AuditEvent[],
  lastSeq = Number.POSITIVE_INFINITY,
): Map<string, string> {
  const outcomes = new Map<string, string>();
  for (const e of events) {
    if (e.seq > lastSeq || !e.stageId) continue;
    if (e.type === "StageSetup") outcomes.delete(e.stageId);
    else if (e.type === "StageExited")
      outcomes.set(e.stageId, String((e.payload as { verdict?: string }).verdict ?? "ok"));
    else if (e.type === "StageCancelled") outcomes.set(e.stageId, "cancelled");
    else if (e.type === "StageInitFailed") outcomes.set(e.stageId, "fail");
  }
  return outcomes;
}

/** The step that stored the event `seq`: the first whose events reach it (the last, if none). */
export function stepOfSeq(steps: readonly Step[], seq: number): number | undefined {
  return steps.find((s) => s.lastSeq >= seq)?.step ?? steps.at(-1)?.step;
}
