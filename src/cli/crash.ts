import { StagechartError } from "../errors.js";
import { refuse } from "./drive.js";
import { type CliIo, EXIT } from "./io.js";

/**
 * The last word on an exception no command handled: a StagechartError as `<code>: <message>`
 * (and `{status: "failed", error}` with --json), anything else as an internal error whose
 * stack `STAGECHART_DEBUG=1` shows. Exit code 1 either way.
 */
export function reportCrash(error: unknown, io: CliIo, json: boolean): number {
  const debug = Boolean(process.env.STAGECHART_DEBUG);
  const stack = error instanceof Error && error.stack ? `${error.stack}\n` : "";
  if (error instanceof StagechartError) {
    refuse(io, json, error);
    if (debug) io.stderr(stack);
    return EXIT.failed;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.stderr(`stagechart: internal error: ${message}\n`);
  io.stderr(debug ? stack : "(set STAGECHART_DEBUG=1 to see the stack)\n");
  return EXIT.failed;
}
