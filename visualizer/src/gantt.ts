import type { AuditEvent } from "../../src/events/audit.js";
import {
  formatDuration,
  type RunTiming,
  runTiming,
  type StageBar,
  type TimedSegment,
} from "../../src/inspect/run-timing.js";
import { h } from "./dom.js";
import type { PickedRow, TimelineFilter } from "./timeline.js";

const KIND_LABEL: Record<TimedSegment["kind"], string> = {
  model: "model call",
  tool: "tool call",
  wait: "wait",
};

/**
 * The duration view of a run: a row per stage execution with its bar on a shared time axis (a
 * sub-pipeline's above its stages, indented), siblings that ran at once marked with their lane,
 * model calls, tool calls and waits as segments inside. A bar picked tells the page its first
 * event; a segment its own. Positions are set through CSSOM: the page's policy allows no inline
 * style attribute.
 */
export class GanttView {
  readonly element = h("div", { class: "gantt", "data-gantt": "" });
  private onPick: (row: PickedRow) => void = () => {};
  private filter: TimelineFilter = {};
  private lastSeq: number | undefined;
  private picked: Element | undefined;

  pick(listener: (row: PickedRow) => void): void {
    this.onPick = listener;
  }

  /** Draws the run's events anew (`now` for a live run's open stages). */
  render(events: readonly AuditEvent[], now?: number): void {
    const timing = runTiming(events, now);
    const span = Math.max(timing.durationMs, 1);
    const at = (t: number) => `${(((t - timing.start) / span) * 100).toFixed(3)}%`;
    const width = (ms: number) => `${((ms / span) * 100).toFixed(3)}%`;
    const rows = timing.bars.map((bar) => this.row(bar, at, width));
    this.element.replaceChildren(
      axis(timing),
      ...(rows.length ? rows : [h("p", { class: "hint" }, "no stage has started yet")]),
      legend(),
    );
    this.picked = undefined;
    this.apply();
  }

  /** Shows only the bars of one stage, and of one event type (its segments, or its bars). */
  setFilter(filter: TimelineFilter): void {
    this.filter = filter;
    this.apply();
  }

  /** Dims what happened after `lastSeq` (a replayed step); nothing when undefined (live). */
  upTo(lastSeq: number | undefined): void {
    this.lastSeq = lastSeq;
    this.apply();
  }

  private apply(): void {
    const { stage, type } = this.filter;
    const later = (seq: number) => this.lastSeq !== undefined && seq > this.lastSeq;
    for (const row of this.element.querySelectorAll<HTMLElement>(".gantt-row")) {
      const types = (row.dataset.types ?? "").split(" ");
      row.hidden =
        (stage !== undefined && row.dataset.stage !== stage) ||
        (type !== undefined && !types.includes(type));
      row.classList.toggle("future", later(Number(row.dataset.seq)));
    }
    for (const segment of this.element.querySelectorAll<HTMLElement>(".gantt-seg")) {
      segment.hidden = type !== undefined && segment.dataset.type !== type;
      segment.classList.toggle("future", later(Number(segment.dataset.seq)));
    }
  }

  private row(
    bar: StageBar,
    at: (t: number) => string,
    width: (ms: number) => string,
  ): HTMLElement {
    const name = `${bar.path.split("/").at(-1)} #${bar.execution}`;
    const picked: PickedRow = {
      seq: bar.firstSeq,
      stageId: bar.stageId,
      stageExecutionId: bar.stageExecutionId,
    };
    const track = h("div", { class: "gantt-track" });
    const block = h("div", {
      class: "gantt-bar pickable",
      "data-bar": bar.stageExecutionId,
      "data-lane": bar.lane,
      "data-outcome": bar.outcome,
      "data-seq": bar.firstSeq,
      "data-duration-ms": bar.durationMs,
      title: `${bar.path} #${bar.execution} · ${formatDuration(bar.durationMs)} · ${bar.outcome}`,
    });
    block.style.left = at(bar.start);
    block.style.width = width(bar.durationMs);
    block.addEventListener("click", () => this.choose(block, picked));
    track.append(block);
    for (const segment of bar.segments) {
      const piece = h("div", {
        class: "gantt-seg pickable",
        "data-kind": segment.kind,
        "data-type": segment.type,
        "data-seq": segment.seq,
        "data-duration-ms": segment.durationMs,
        title: `${KIND_LABEL[segment.kind]}: ${segment.label} · ${formatDuration(segment.durationMs)}`,
      });
      piece.style.left = at(segment.start);
      piece.style.width = width(segment.durationMs);
      piece.addEventListener("click", (event) => {
        event.stopPropagation();
        this.choose(piece, { ...picked, seq: segment.seq });
      });
      track.append(piece);
    }
    const label = h(
      "div",
      { class: "gantt-label", title: bar.stageExecutionId },
      name,
      bar.lane > 0
        ? h("span", { class: "lane", title: "ran beside the stages above" }, `∥${bar.lane + 1}`)
        : "",
    );
    label.style.paddingLeft = `${6 + bar.depth * 14}px`;
    label.addEventListener("click", () => this.choose(block, picked));
    return h(
      "div",
      {
        class: "gantt-row",
        "data-execution": bar.stageExecutionId,
        "data-stage": bar.stageId,
        "data-seq": bar.firstSeq,
        "data-types": bar.types.join(" "),
      },
      label,
      track,
      h("div", { class: "gantt-duration", "data-duration": "" }, formatDuration(bar.durationMs)),
    );
  }

  private choose(element: Element, row: PickedRow): void {
    this.picked?.classList.remove("picked");
    element.classList.add("picked");
    this.picked = element;
    this.onPick(row);
  }
}

/** What the segments' colours mean. */
function legend(): HTMLElement {
  return h(
    "div",
    { class: "gantt-legend" },
    ...(["model", "tool", "wait"] as const).map((kind) =>
      h("span", {}, h("i", { class: "gantt-swatch", "data-kind": kind }), KIND_LABEL[kind]),
    ),
    h("span", {}, "∥n: ran beside the stages above it"),
  );
}

/** The time axis: the run's start, quarters and end, as time since the start. */
function axis(timing: RunTiming): HTMLElement {
  const ticks = h("div", { class: "gantt-track gantt-ticks" });
  for (const quarter of [0, 0.25, 0.5, 0.75, 1]) {
    const tick = h("span", { class: "tick" }, formatDuration(timing.durationMs * quarter));
    tick.style.left = `${quarter * 100}%`;
    ticks.append(tick);
  }
  return h(
    "div",
    { class: "gantt-axis" },
    h("div", { class: "gantt-label" }, "stage"),
    ticks,
    h("div", { class: "gantt-duration" }, formatDuration(timing.durationMs)),
  );
}
