import type { AuditEvent } from "../../src/events/audit.js";
import type { ModelDelta } from "../../src/events/run-events.js";
import {
  replySoFar,
  StreamingReplies,
  type StreamingReply,
  type TurnReached,
  turnRecorded,
} from "../../src/inspect/live-replies.js";
import { h } from "./dom.js";

/**
 * The replies a live run's model calls are receiving, shown at the end of the transcript panel
 * of the stage execution picked: what the server held when the page began watching, then each
 * piece as it comes. A reply stays until the page's own audit events have its turn — the stored
 * transcript, fetched then, takes its place — so a piece that arrives after its turn's event (the
 * two come by different paths) is not shown again.
 */
export class StreamingReplyView {
  /** The last `<li>` of the transcript panel; hidden while no reply streams for what it shows. */
  readonly element: HTMLLIElement;
  private readonly text: HTMLPreElement;
  private readonly replies = new StreamingReplies();
  /** Each stage execution's last turn recorded, by the audit events the page holds. */
  private readonly recorded = new Map<string, TurnReached>();
  private shown: string | undefined;

  constructor() {
    this.text = h("pre", {});
    this.element = h(
      "li",
      { class: "msg msg-assistant msg-streaming", "data-streaming": "" },
      h("span", { class: "role" }, "assistant · streaming"),
      this.text,
    );
    this.element.hidden = true;
  }

  /** The stage execution whose panel is open. */
  show(stageExecutionId: string): void {
    this.shown = stageExecutionId;
    this.render();
  }

  /** Audit events the page got: each turn recorded ends its reply (not drawn until `render`). */
  audited(events: readonly AuditEvent[]): void {
    for (const event of events) {
      // A failed call's reply is ended by the server (the call is made again, for the same turn).
      if (event.type !== "ModelTurn" || !event.stageExecutionId) continue;
      if (event.payload.outcome === "error") continue;
      const turn = Number(event.payload.turn);
      if (!Number.isSafeInteger(turn)) continue;
      const known = this.recorded.get(event.stageExecutionId);
      const attempt = event.attempt ?? known?.attempt ?? 1;
      if (!known || turnRecorded(known, { attempt, turn }))
        this.recorded.set(event.stageExecutionId, { attempt, turn });
      this.replies.drop(event.stageExecutionId, { attempt, turn });
    }
  }

  /** What the server holds as the page starts watching (again). */
  reset(replies: readonly StreamingReply[]): void {
    this.replies.replace(replies.filter((reply) => !this.isRecorded(reply)));
    this.render();
  }

  add(delta: ModelDelta): void {
    if (this.isRecorded(delta)) return;
    this.replies.add(delta);
    if (delta.stageExecutionId === this.shown) this.render();
  }

  /** The reply ended without its turn (its run's stream closed, its stage stopped). */
  ended(stageExecutionId: string): void {
    this.replies.drop(stageExecutionId);
    if (stageExecutionId === this.shown) this.render();
  }

  render(): void {
    const reply = this.shown === undefined ? undefined : this.replies.get(this.shown);
    this.element.hidden = !reply;
    if (!reply) {
      this.element.setAttribute("data-streaming", "");
      return;
    }
    this.element.setAttribute("data-streaming", reply.stageExecutionId);
    this.element.setAttribute("data-streaming-turn", String(reply.turn));
    this.text.textContent = replySoFar(reply);
  }

  private isRecorded(at: TurnReached & { stageExecutionId: string }): boolean {
    const recorded = this.recorded.get(at.stageExecutionId);
    return recorded !== undefined && turnRecorded(at, recorded);
  }
}
