import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { Host } from "../runtime/host.js";
import type { HostSettings } from "../runtime/stored-host.js";
import { refuse } from "./drive.js";
import { hostFor, sandboxWarning } from "./host-options.js";
import { type CliIo, EXIT } from "./io.js";
import { type Progress, progressFor } from "./live-progress.js";
import { attachMcpForCli } from "./mcp-options.js";
import { loadPipelineForCli } from "./pipelines.js";

/**
 * What `run` and `resume` both need before a run goes: the run's MCP servers started (first:
 * the pipeline's allowedTools may name their tools), the pipeline loaded against them, and the
 * host. The servers are closed once `work` is done, however it ends. `run` names the run a
 * refusal is about, with its status when it is stored already.
 */
export async function withRunHost(
  settings: HostSettings,
  io: CliIo,
  json: boolean | undefined,
  run: { runId?: string | undefined; status?: string },
  work: (pipeline: PipelineDefinition, host: Host, progress: Progress) => Promise<number>,
): Promise<number> {
  const mcp = await attachMcpForCli(settings.mcp, io);
  if (!mcp.ok) return refuse(io, json, mcp.error, run.runId, run.status);
  try {
    const tools = mcp.value.tools;
    const pipeline = await loadPipelineForCli(
      settings.pipelineFile,
      io,
      tools.map((tool) => tool.name),
    );
    if (!pipeline) return EXIT.failed;
    const progress = progressFor(io, json);
    const host = await hostFor(settings, tools, progress, io.terminal);
    if (!host.ok) return refuse(io, json, host.error, run.runId, run.status);
    const warning = sandboxWarning(host.value);
    if (warning)
      io.stderr(`${warning}
`);
    return await work(pipeline, host.value, progress);
  } finally {
    await mcp.value.close();
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
