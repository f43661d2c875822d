import type { RunEvent } from "../events/run-events.js";
import type { CliIo } from "./io.js";
import { paintFor, progressLine } from "./progress.js";
import { foldStatus, NO_STATUS, RUN_ENDS, renderStatus } from "./status.js";

/** Someone is asked something on the terminal (a grant prompt on stderr). */
export interface PromptWatcher {
  promptOpened(): void;
  promptClosed(): void;
}

/** How a run's progress is shown while `drive` watches it. */
export interface Progress extends PromptWatcher {
  /** An event of the run: an audit event, or a piece of a streaming reply. */
  event(event: RunEvent): void;
  /** A line that is not an event (what a suspended run waits for), after `end`. */
  line(text: string): void;
  /** The run has ended. */
  end(): void;
}

/**
 * Progress for a command: one line per event on stdout (coloured when `io.colour`), or plain on
 * stderr with --json; on a terminal that can redraw (and not --json) a live status line sits
 * below the lines, with the reply streaming now. With --stream-json: every event, the pieces of
 * streaming replies too, as a JSON line on stdout.
 */
export function progressFor(
  io: CliIo,
  json: boolean | undefined,
  streamJson?: boolean | undefined,
): Progress {
  if (streamJson) return jsonLines(io.stdout);
  if (json) return plainProgress(io.stderr, false);
  return io.terminalWidth?.() !== undefined
    ? liveProgress(io)
    : plainProgress(io.stdout, Boolean(io.colour));
}

/** Every event as one line of JSON (NDJSON), as it comes. */
function jsonLines(write: (text: string) => void): Progress {
  return {
    event: (event) => write(`${JSON.stringify(event)}\n`),
    line() {},
    end() {},
    promptOpened() {},
    promptClosed() {},
  };
}

/** One line per event, nothing else. */
function plainProgress(write: (text: string) => void, colour: boolean): Progress {
  return {
    event(event) {
      if (event.type === "ModelDelta") return;
      const line = progressLine(event, colour);
      if (line) write(`${line}\n`);
    },
    line: (text) => write(`${text}\n`),
    end() {},
    promptOpened() {},
    promptClosed() {},
  };
}

const CLEAR_LINE = "\r\u001b[2K";

/**
 * Event lines (coloured when `io.colour`) with a status line below them, redrawn in place on
 * every event and each second. The status line is cleared before a line is printed and removed
 * at the end. While a grant is being asked for, it stays hidden and event lines wait, so the
 * prompt is not garbled.
 */
export function liveProgress(
  io: CliIo,
  options: { now?: () => number; tickMs?: number } = {},
): Progress {
  const now = options.now ?? Date.now;
  const colour = Boolean(io.colour);
  let status = NO_STATUS;
  let started: number | undefined;
  /** The status line on the terminal now ("" when there is none). */
  let shown = "";
  let prompts = 0;
  let ended = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  const waiting: string[] = [];

  const statusText = (): string => {
    const quiet = ended || prompts > 0 || status.asking.length > 0 || started === undefined;
    if (quiet) return "";
    const width = io.terminalWidth?.() ?? 80;
    return paintFor(colour).dim(renderStatus(status, now() - (started ?? now()), width));
  };
  /** Writes `lines` where the status line was, then the status line again, in one write. */
  const draw = (lines = "") => {
    const next = statusText();
    if (!lines && next === shown) return;
    io.stdout(`${shown ? CLEAR_LINE : ""}${lines}${next}`);
    shown = next;
  };

  return {
    event(event) {
      if (started === undefined) {
        started = now();
        timer = setInterval(() => draw(), options.tickMs ?? 1000);
        timer.unref();
      }
      status = foldStatus(status, event);
      if (event.type === "ModelDelta") {
        draw();
        return;
      }
      if (RUN_ENDS.has(event.type)) ended = true;
      const line = progressLine(event, colour);
      if (line) waiting.push(`${line}\n`);
      if (prompts === 0) draw(waiting.splice(0).join(""));
      else draw();
    },
    line(text) {
      draw(`${text}\n`);
    },
    end() {
      ended = true;
      clearInterval(timer);
      draw(waiting.splice(0).join(""));
    },
    promptOpened() {
      prompts++;
      draw();
    },
    promptClosed() {
      prompts = Math.max(0, prompts - 1);
      draw(prompts === 0 ? waiting.splice(0).join("") : "");
    },
  };
}
