import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { Host } from "../runtime/host.js";
import type { HostSettings } from "../runtime/stored-host.js";
import type { AnyTool } from "../tools/index.js";
import { refuse } from "./drive.js";
import { hostFor, sandboxWarning } from "./host-options.js";
import { type CliIo, EXIT } from "./io.js";
import { type Progress, progressFor } from "./live-progress.js";
import { attachMcpForCli } from "./mcp-options.js";
import { loadPipelineForCli } from "./pipelines.js";

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
  run: { runId?: string | undefined; status?: string },
): Promise<{ ok: true; value: RunHost } | { ok: false; exit: number }> {
  const mcp = await attachMcpForCli(settings.mcp, io);
  if (!mcp.ok) return { ok: false, exit: refuse(io, json, mcp.error, run.runId, run.status) };
  const close = () => mcp.value.close();
  const opened = await runHostOf(settings, io, json, run, mcp.value.tools).catch(
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
  run: { runId?: string | undefined; status?: string },
  tools: readonly AnyTool[],
): Promise<{ ok: true; value: Omit<RunHost, "close"> } | { ok: false; exit: number }> {
  const names = tools.map((tool) => tool.name);
  const pipeline = await loadPipelineForCli(settings.pipelineFile, io, names);
  if (!pipeline) return { ok: false, exit: EXIT.failed };
  const progress = progressFor(io, json);
  const host = await hostFor(settings, tools, progress, io.terminal);
  if (!host.ok) return { ok: false, exit: refuse(io, json, host.error, run.runId, run.status) };
  const warning = sandboxWarning(host.value);
  if (warning) io.stderr(`${warning}\n`);
  return { ok: true, value: { pipeline, host: host.value, progress } };
}

/** `openRunHost`, then `work` with what it opened, closing the servers however it ends. */
export async function withRunHost(
  settings: HostSettings,
  io: CliIo,
  json: boolean | undefined,
  run: { runId?: string | undefined; status?: string },
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
