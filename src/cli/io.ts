import pc from "picocolors";

/** Where the CLI writes; tests pass their own, the binary passes the process streams. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /**
   * When stdout is a terminal that can redraw a line in place (not `TERM=dumb`), its width now,
   * for the live status line; otherwise undefined.
   */
  terminalWidth?(): number | undefined;
  /** Whether what goes to stdout is coloured (default: not). */
  colour?: boolean;
  /**
   * The terminal a person answers prompts at: there when stdin is one. Without it nobody is
   * asked live, and a run is headless whatever its flags say.
   */
  terminal?: Terminal;
}

/** Where a prompt is read (stdin) and asked (stderr). */
export interface Terminal {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

let shared: CliIo | undefined;

/**
 * The process's own streams, each written until it closes (`| head`), then quietly no more.
 * Colour follows picocolors' reading of the environment (`NO_COLOR`, `FORCE_COLOR`, `TERM=dumb`,
 * a terminal, `CI`); a dumb terminal gets no redrawn status line.
 */
export function processIo(): CliIo {
  shared ??= {
    stdout: writerOf(process.stdout),
    stderr: writerOf(process.stderr),
    terminalWidth: () =>
      process.stdout.isTTY && process.env.TERM !== "dumb"
        ? process.stdout.columns || 80
        : undefined,
    colour: pc.isColorSupported,
    ...(process.stdin.isTTY && { terminal: { input: process.stdin, output: process.stderr } }),
  };
  return shared;
}

/**
 * A stream's writer that survives its reader going away: a write error (EPIPE when the pipe's
 * reader has exited) closes it for good instead of crashing the process, and later writes are
 * dropped. A run goes on to its end and is stored; nothing is left half-done for want of a reader.
 */
function writerOf(stream: NodeJS.WritableStream & { destroyed?: boolean }) {
  let closed = false;
  stream.on("error", () => {
    closed = true;
  });
  return (text: string): void => {
    if (closed || stream.destroyed) return;
    stream.write(text);
  };
}

/** The CLI's exit codes, so a script tells a finished, failed, misused and suspended run apart. */
export const EXIT = { done: 0, failed: 1, usage: 2, suspended: 3 } as const;
