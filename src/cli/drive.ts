import type { RunHandle, RunWait } from "../runtime/run.js";
import { type CliIo, EXIT } from "./io.js";
import type { Progress } from "./live-progress.js";

/**
 * Watches a run to its end: its progress as it goes (see `progressFor`), Ctrl-C cancels it,
 * and with --json a summary `{runId, status, error?, output?}` last on stdout.
 */
export async function drive(
  handle: RunHandle,
  io: CliIo,
  json: boolean,
  progress: Progress,
): Promise<number> {
  const cancel = () => handle.send({ type: "CANCEL", reason: "interrupted (SIGINT)" });
  process.once("SIGINT", cancel);
  try {
    for await (const event of handle.events()) progress.event(event);
  } finally {
    progress.end();
    process.off("SIGINT", cancel);
  }
  const result = await handle.result;
  const { runId, status, error, output, waiting } = result;
  for (const wait of waiting ?? []) progress.line(waitLine(runId, wait));
  // A run stopped by its store (or a lost lease) is left resumable, but the command failed.
  const stopped = status === "suspended" && error !== undefined;
  if (stopped) {
    // A store deleted or replaced under the run has nothing of it left to resume.
    const kept = error.context.storeGone ? "" : ` (run ${runId} is kept as stored, to resume)`;
    io.stderr(`${error.code}: ${error.message}${kept}\n`);
  }
  if (json) {
    io.stdout(
      `${JSON.stringify({ runId, status, ...(error && { error }), ...(output !== undefined && { output }), ...(waiting && { waiting }) })}\n`,
    );
  }
  return result.status === "done"
    ? EXIT.done
    : result.status === "failed" || stopped
      ? EXIT.failed
      : EXIT.suspended;
}

/**
 * An error before a run could start, or instead of it: a JSON summary with --json (with the
 * run's id when it is known, and the status of a stored run the command left as it was), and
 * the reason on stderr.
 */
export function refuse(
  io: CliIo,
  json: boolean | undefined,
  error: { code: string; message: string },
  runId?: string,
  status = "failed",
): number {
  if (json)
    io.stdout(`${JSON.stringify({ ...(runId !== undefined && { runId }), status, error })}\n`);
  io.stderr(`${error.code}: ${error.message}\n`);
  return EXIT.failed;
}

/** What a suspended run waits for, and the command that answers it. */
export function waitLine(runId: string, wait: RunWait): string {
  // A wait with a deadline: nobody answering by then is taken as its timeout's fallback.
  const by = wait.kind !== "gate" && wait.deadline ? ` (answer by ${wait.deadline})` : "";
  if (wait.kind === "input")
    return `waiting: ${wait.stageId} asks: ${wait.prompt}${by} — stagechart resume ${runId} --input '<json>'`;
  return wait.kind === "grant"
    ? `waiting: ${wait.stageId} asks for ${wait.tool}(${wait.argsSummary})${by} — stagechart resume ${runId} --approve ${wait.proposalId} (or --deny)`
    : `waiting: ${wait.stageId}'s gate deferred — stagechart resume ${runId} checks it again`;
}
