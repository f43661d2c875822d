import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { Host } from "../runtime/host.js";
import type { HostSettings } from "../runtime/stored-host.js";
import { tracingFromEnv } from "../runtime/tracing/otlp.js";
import type { Tracing } from "../runtime/tracing/run-spans.js";
import type { AnyTool } from "../tools/index.js";
import { refuse } from "./drive.js";
import { hostFor, sandboxWarning } from "./host-options.js";
import { type CliIo, EXIT } from "./io.js";
import { type Progress, progressFor } from "./live-progress.js";
import { attachMcpForCli } from "./mcp-options.js";
import { loadPipelineForCli } from "./pipelines.js";

/**
 * The run a command is about, for its refusals (its id, and status when stored), whether its
 * spans carry what was said (`--trace-content`; spans are sent when `OTEL_*` variables ask), and
 * how its progress is shown.
 */
export interface RunNamed {
  runId?: string | undefined;
  status?: string;
  traceContent?: boolean | undefined;
  /** Every event as a JSON line on stdout, the pieces of streaming replies too (`--stream-json`). */
  streamJson?: boolean | undefined;
}

/** A run's pipeline and host, ready to go on in this process, and its MCP servers to close after. */
export interface RunHost {
  pipeline: PipelineDefinition;
  host: Host;
  progress: Progress;
  close(): Promise<void>;
}

/**
 * What `run` and `resume` both need before a run goes: the run's MCP servers started (first:
 * the pipeline's allowedTools may name their tools), the pipeline loaded against them, and the
 * host; or the exit code once the refusal is printed (`run` names the run a refusal is about,
 * with its status when it is stored already). `close` stops the servers.
 */
export async function openRunHost(
  settings: HostSettings,
  io: CliIo,
  json: boolean | undefined,
  run: RunNamed,
): Promise<{ ok: true; value: RunHost } | { ok: false; exit: number }> {
  // Tracing first: a variable asking for what stagechart cannot send refuses before anything runs.
  const tracing = await tracingFromEnv(process.env, { content: run.traceContent ?? false });
  if (!tracing.ok)
    return { ok: false, exit: refuse(io, json, tracing.error, run.runId, run.status) };
  const mcp = await attachMcpForCli(settings.mcp, io);
  if (!mcp.ok) return { ok: false, exit: refuse(io, json, mcp.error, run.runId, run.status) };
  // The spans still batched are sent before the command ends, however it ends.
  const close = async () => {
    await mcp.value.close();
    await endTracing(tracing.value, io);
  };
  const opened = await runHostOf(settings, io, json, run, mcp.value.tools, tracing.value).catch(
    async (error: unknown) => {
      await close();
      throw error;
    },
  );
  if (!opened.ok) await close();
  return opened.ok ? { ok: true, value: { ...opened.value, close } } : opened;
}

async function runHostOf(
  settings: HostSettings,
  io: CliIo,
  json: boolean | undefined,
  run: RunNamed,
  tools: readonly AnyTool[],
  tracing: Tracing | undefined,
): Promise<{ ok: true; value: Omit<RunHost, "close"> } | { ok: false; exit: number }> {
  const names = tools.map((tool) => tool.name);
  const pipeline = await loadPipelineForCli(settings.pipelineFile, io, names);
  if (!pipeline) return { ok: false, exit: EXIT.failed };
  const progress = progressFor(io, json, run.streamJson);
  const host = await hostFor(
    settings,
    { extraTools: tools, prompts: progress, tracing },
    io.terminal,
  );
  if (!host.ok) return { ok: false, exit: refuse(io, json, host.error, run.runId, run.status) };
  const warning = sandboxWarning(host.value);
  if (warning) io.stderr(`${warning}\n`);
  return { ok: true, value: { pipeline, host: host.value, progress } };
}

/**
 * Sends the spans still batched and stops tracing. A collector that is down or refuses them costs
 * the command a warning, never its exit code: the run is what it is either way.
 */
export async function endTracing(tracing: Tracing | undefined, io: CliIo): Promise<void> {
  try {
    await tracing?.shutdown();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(
      `stagechart: warning: ExtensionHost/TraceExportFailed: the run's spans were not all sent: ${message}\n`,
    );
  }
}

/** `openRunHost`, then `work` with what it opened, closing the servers however it ends. */
export async function withRunHost(
  settings: HostSettings,
  io: CliIo,
  json: boolean | undefined,
  run: RunNamed,
  work: (pipeline: PipelineDefinition, host: Host, progress: Progress) => Promise<number>,
): Promise<number> {
  const opened = await openRunHost(settings, io, json, run);
  if (!opened.ok) return opened.exit;
  const { pipeline, host, progress, close } = opened.value;
  try {
    return await work(pipeline, host, progress);
  } finally {
    await close();
  }
}

export const WAIT_FOR_PAGE_HELP =
  "with --inspect and no terminal: grant requests and questions wait for the inspect page's answer (the run waits until one comes)";

/**
 * Whether the inspect page answers the run's grant requests and questions: on a terminal (beside
 * its prompt), or without one when `--wait-for-page` asks for it — never by default without one,
 * so a run nobody watches does not wait forever.
 */
export const pageAnswers = (
  settings: HostSettings,
  io: CliIo,
  waitForPage: boolean | undefined,
): boolean => !settings.headless && (io.terminal !== undefined || waitForPage === true);
