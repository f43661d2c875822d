import type { RunHandle, RunWait } from "../runtime/run.js";
import { type CliIo, EXIT } from "./io.js";
import { progressLine } from "./progress.js";

/**
 * Watches a run to its end: progress lines as it goes (stderr with --json), Ctrl-C cancels it,
 * and with --json a summary `{runId, status, error?, output?}` last on stdout.
 */
export async function drive(handle: RunHandle, io: CliIo, json: boolean): Promise<number> {
  const cancel = () => handle.send({ type: "CANCEL", reason: "interrupted (SIGINT)" });
  process.once("SIGINT", cancel);
  const progress = json ? io.stderr : io.stdout;
  const colour = !json && Boolean(process.stdout.isTTY);
  for await (const event of handle.events()) {
    const line = progressLine(event, colour);
    if (line) progress(`${line}\n`);
  }
  const result = await handle.result;
  process.off("SIGINT", cancel);
  const { runId, status, error, output, waiting } = result;
  for (const wait of waiting ?? []) progress(`${waitLine(runId, wait)}\n`);
  if (json) {
    io.stdout(
      `${JSON.stringify({ runId, status, ...(error && { error }), ...(output !== undefined && { output }), ...(waiting && { waiting }) })}\n`,
    );
  }
  return result.status === "done"
    ? EXIT.done
    : result.status === "failed"
      ? EXIT.failed
      : EXIT.suspended;
}

/** An error before a run could start: a JSON summary with --json, and the reason on stderr. */
export function refuse(
  io: CliIo,
  json: boolean | undefined,
  error: { code: string; message: string },
): number {
  if (json) io.stdout(`${JSON.stringify({ status: "failed", error })}\n`);
  io.stderr(`${error.code}: ${error.message}\n`);
  return EXIT.failed;
}

/** What a suspended run waits for, and the command that answers it. */
export function waitLine(runId: string, wait: RunWait): string {
  return wait.kind === "grant"
    ? `waiting: ${wait.stageId} asks for ${wait.tool}(${wait.argsSummary}) — stagechart resume ${runId} --approve ${wait.proposalId} (or --deny)`
    : `waiting: ${wait.stageId}'s gate deferred — stagechart resume ${runId} checks it again`;
}
