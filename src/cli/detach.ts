import { randomUUID } from "node:crypto";
import { bundleDefinition, loadBundle } from "../bundles/index.js";
import { fingerprint } from "../compiler/definition-hash.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { ok, type Result, StagechartError } from "../errors.js";
import { checkContext } from "../runtime/run-checks.js";
import type { DefinitionBundle } from "../runtime/run-records.js";
import type { HostSettings } from "../runtime/stored-host.js";
import { openAnyStore } from "./any-store.js";
import { refuse } from "./drive.js";
import { type CliIo, EXIT } from "./io.js";
import { attachMcpForCli } from "./mcp-options.js";
import { loadPipelineForCli } from "./pipelines.js";

interface DetachFlags {
  task?: string;
  set: Record<string, unknown>;
  store?: string;
  runId?: string;
  json?: boolean;
}

/**
 * `run … --detach`: the pipeline is loaded and the ctx checked as for a run, then its definition
 * files are stored under their hash and the run is queued (status `queued`) for a worker, which
 * runs exactly that definition. Nothing runs here: the run's id is printed and the command ends.
 */
export async function detachRun(
  name: string,
  settings: HostSettings,
  flags: DetachFlags,
  io: CliIo,
): Promise<number> {
  const refused = (error: StagechartError) => refuse(io, flags.json, error, flags.runId);
  const loaded = await loadForDetach(name, settings, io);
  if (!loaded.ok) return refused(loaded.error);
  const pipeline = loaded.value;
  if (!pipeline) return EXIT.failed;
  const ctx = { ...flags.set, ...(flags.task !== undefined && { task: flags.task }) };
  if (flags.task !== undefined && flags.set.task !== undefined)
    return refused(
      new StagechartError(
        "Validation/RunContextInvalid",
        "the task is given twice (as --task and as --set task=…); give it once",
      ),
    );
  const invalid = checkContext(pipeline, ctx);
  if (invalid) return refused(invalid);
  const bundled = await bundleDefinition(pipeline);
  if (!bundled.ok) return refused(bundled.error);
  const { hash, bundle } = bundled.value;

  const store = await openAnyStore(flags.store);
  if (!store.ok) return refused(store.error);
  try {
    await store.value.saveDefinition(hash, bundle);
    const runId = flags.runId ?? `run-${randomUUID().slice(0, 8)}`;
    const queued = await store.value.enqueueRun({
      runId,
      pipelineId: pipeline.id,
      definitionHash: hash,
      options: { ...settings, ctx, definition: fingerprint(pipeline).parts },
    });
    if (!queued.ok) return refused(queued.error);
    return reportQueued(io, Boolean(flags.json), { runId, definitionHash: hash });
  } catch (error) {
    if (!(error instanceof StagechartError)) throw error;
    return refused(error);
  } finally {
    await store.value.close();
  }
}

/**
 * A pipeline loaded to be stored for a worker (`run --detach`, `fork --detach`): its MCP servers
 * are asked for their tools, which allowedTools may name, and stopped again. `undefined` once the
 * loader has printed why it does not load.
 */
export async function loadForDetach(
  file: string,
  settings: HostSettings,
  io: CliIo,
): Promise<Result<PipelineDefinition | undefined>> {
  const toolNames = await mcpToolNames(settings, io);
  if (!toolNames.ok) return toolNames;
  return ok(await loadPipelineForCli(file, io, toolNames.value));
}

/** What `run --detach` and `fork --detach` print of the run they queued; exit 0. */
export function reportQueued(
  io: CliIo,
  json: boolean,
  queued: { runId: string; definitionHash: string; from?: { runId: string; step: number } },
): number {
  const { runId, ...rest } = queued;
  io.stdout(json ? `${JSON.stringify({ runId, status: "queued", ...rest })}\n` : `${runId}\n`);
  if (!json) io.stderr(`run ${runId} queued: a worker on this store runs it\n`);
  return EXIT.done;
}

/**
 * `loadForDetach` of a definition already in the store (`fork --detach`): its bundle loaded as
 * a worker loads it, so no file of the machine that stored it is needed.
 */
export async function loadStoredForDetach(
  hash: string,
  bundle: DefinitionBundle,
  settings: HostSettings,
  io: CliIo,
): Promise<Result<PipelineDefinition>> {
  const toolNames = await mcpToolNames(settings, io);
  if (!toolNames.ok) return toolNames;
  return loadBundle(hash, bundle, { mcpToolNames: toolNames.value });
}

/** The tools the pipeline's MCP servers offer, which allowedTools may name; the servers stopped again. */
async function mcpToolNames(settings: HostSettings, io: CliIo): Promise<Result<string[]>> {
  const mcp = await attachMcpForCli(settings.mcp, io);
  if (!mcp.ok) return mcp;
  const toolNames = mcp.value.tools.map((tool) => tool.name);
  await mcp.value.close();
  return ok(toolNames);
}
