import type { AuditEvent } from "../../src/events/audit.js";
import { h } from "./dom.js";
import { GanttView } from "./gantt.js";
import { type PickedRow, Timeline, type TimelineFilter } from "./timeline.js";

type View = "table" | "gantt";

/**
 * The run's timeline in two views — the table of audit events, and the durations (a Gantt chart
 * of its stage executions) — switched by a toggle, with one filter by stage and by event type for
 * both. The durations are drawn when shown: a page opened on the table pays nothing for them.
 */
export class TimelinePanel {
  readonly element: HTMLElement;
  private readonly table = new Timeline();
  private readonly gantt = new GanttView();
  private readonly events: AuditEvent[] = [];
  private readonly seen = new Set<number>();
  private readonly stageChoice = h("select", { "aria-label": "stage", "data-filter": "stage" });
  private readonly typeChoice = h("select", { "aria-label": "event type", "data-filter": "type" });
  private readonly toggles = new Map<View, HTMLButtonElement>();
  private view: View = "table";
  private live = false;
  private drawn = false;
  private redraw: number | undefined;

  constructor() {
    const toggle = h("div", { class: "view-toggle", role: "group", "aria-label": "timeline view" });
    for (const [view, label] of [
      ["table", "Events"],
      ["gantt", "Durations"],
    ] as const) {
      const button = h(
        "button",
        { type: "button", "data-timeline-view": view, onclick: () => this.show(view) },
        label,
      );
      this.toggles.set(view, button);
      toggle.append(button);
    }
    this.stageChoice.addEventListener("change", () => this.filter());
    this.typeChoice.addEventListener("change", () => this.filter());
    this.element = h(
      "div",
      { class: "timeline-panel" },
      h(
        "div",
        { class: "timeline-head" },
        h("h2", {}, "Timeline"),
        toggle,
        this.stageChoice,
        this.typeChoice,
      ),
      this.table.element,
      this.gantt.element,
    );
    this.show("table");
  }

  pick(listener: (row: PickedRow) => void): void {
    this.table.pick(listener);
    this.gantt.pick(listener);
  }

  add(events: readonly AuditEvent[]): void {
    const fresh = events.filter((e) => !this.seen.has(e.seq));
    if (fresh.length === 0) return;
    for (const e of fresh) this.seen.add(e.seq);
    this.events.push(...fresh);
    this.table.add(fresh);
    this.offer();
    if (this.view === "gantt") this.drawSoon();
    else this.drawn = false;
  }

  /** A running run's open stages grow until now. */
  setLive(live: boolean): void {
    if (live === this.live) return;
    this.live = live;
    if (this.view === "gantt") this.drawSoon();
  }

  upTo(lastSeq: number | undefined): void {
    this.table.upTo(lastSeq);
    this.gantt.upTo(lastSeq);
  }

  private show(view: View): void {
    this.view = view;
    for (const [name, button] of this.toggles)
      button.setAttribute("aria-pressed", String(name === view));
    this.element.setAttribute("data-view", view);
    this.table.element.hidden = view !== "table";
    this.gantt.element.hidden = view !== "gantt";
    if (view === "gantt" && !this.drawn) this.draw();
  }

  private draw(): void {
    this.redraw = undefined;
    this.gantt.render(this.events, this.live ? Date.now() : undefined);
    this.drawn = true;
  }

  /** Many events arrive in bursts: the chart is drawn once for the burst. */
  private drawSoon(): void {
    this.redraw ??= requestAnimationFrame(() => this.draw());
  }

  private filter(): void {
    const filter: TimelineFilter = {
      ...(this.stageChoice.value && { stage: this.stageChoice.value }),
      ...(this.typeChoice.value && { type: this.typeChoice.value }),
    };
    this.table.setFilter(filter);
    this.gantt.setFilter(filter);
  }

  /** The stages and event types the run has so far, as the filter's choices. */
  private offer(): void {
    const stages = [...new Set(this.events.flatMap((e) => (e.stageId ? [e.stageId] : [])))];
    const types = [...new Set(this.events.map((e) => e.type))];
    refill(this.stageChoice, "every stage", stages);
    refill(this.typeChoice, "every event", types);
  }
}

/** The select's options: "all" first, then `values`; the choice kept. Untouched when unchanged. */
function refill(select: HTMLSelectElement, all: string, values: readonly string[]): void {
  const shown = [...select.options].slice(1).map((o) => o.value);
  if (shown.join("\u0000") === values.join("\u0000")) return;
  const chosen = select.value;
  select.replaceChildren(
    h("option", { value: "" }, all),
    ...values.map((value) => h("option", { value }, value)),
  );
  select.value = values.includes(chosen) ? chosen : "";
}
