import { existsSync, readdirSync, statSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { bundleDefinition, loadBundle } from "../bundles/index.js";
import { fingerprint } from "../compiler/definition-hash.js";
import { formatDiagnostic, isError, type LoadResult } from "../definitions/diagnostics.js";
import { isWorkflowDirectory, loadWorkflowPipeline } from "../definitions/pi-workflows/index.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { RunHandle } from "../runtime/launch.js";
import { startRun } from "../runtime/run.js";
import { checkContext } from "../runtime/run-checks.js";
import type { RunStore } from "../runtime/store-port.js";
import { type HostSettings, storedRunHost, withModel } from "../runtime/stored-host.js";
import type { StartRequest } from "./schemas.js";

/** What every run the server starts is run with, besides its pipeline and model. */
export type ServedSettings = Omit<
  HostSettings,
  "pipelineFile" | "model" | "modelKeyRequired" | "defaultModel" | "headless" | "onGrant"
>;

/**
 * How the server's runs go: run here through the run API (a SQLite store), or only queued for
 * `stagechart worker` (a shared PostgreSQL store).
 */
export type RunsMode = "in-process" | "queued";

export interface StarterOptions {
  /** The directory whose pipelines a start may name (`<name>.yaml`, or a workflow directory). */
  pipelinesDir: string;
  settings: ServedSettings;
  runs: RunsMode;
  /** Told of each run started here, which the server stops when it closes. */
  started(handle: RunHandle): void;
}

/** A started (or queued) run, as the start route answers it. */
export interface StartedRun {
  runId: string;
  pipelineId: string;
  definitionHash: string;
  status: "running" | "queued";
}

/** A start request as the server stores it with the run, to know it again under the same key. */
export interface IdempotencyMark {
  /** The SHA-256 of the request's body, its keys sorted. */
  request: string;
}

/**
 * Starts a run as `stagechart run` does, headless: its grant requests and ask stages suspend it
 * until answered (over the API), since nobody is at a terminal here. The pipeline is one of the
 * served directory's or a definition stored under its hash; the model is a spec, a scripted or
 * replay file inside the served directory, or by default the script beside the pipeline. Every
 * start stores its definition too, so a run can be resumed from the store alone. In-process, the
 * run goes through `startRun`; queued, it is stored for a worker as `run --detach` stores it.
 */
export async function startServedRun(
  store: RunStore,
  request: StartRequest,
  runId: string,
  mark: IdempotencyMark | undefined,
  options: StarterOptions,
): Promise<Result<StartedRun>> {
  const pipeline = await pipelineOf(store, request, options.pipelinesDir);
  if (!pipeline.ok) return pipeline;
  const file = pipeline.value.file;
  if (file === undefined)
    return err(
      new StagechartError("Validation/PipelineNotFound", "the pipeline has no file to run from"),
    );
  const model = modelSpecOf(request.model, options.pipelinesDir);
  if (!model.ok) return model;
  const settings = withModel(
    { ...options.settings, pipelineFile: file, headless: true, onGrant: "suspend" },
    model.value,
  );
  const ctx = { ...request.ctx, ...(request.task !== undefined && { task: request.task }) };
  if (request.task !== undefined && request.ctx?.task !== undefined)
    return err(
      new StagechartError(
        "Validation/RunContextInvalid",
        "the task is given twice (as task and as ctx.task); give it once",
      ),
    );
  const invalid = checkContext(pipeline.value, ctx);
  if (invalid) return err(invalid);
  // The host is built in either mode: a model that cannot be had is refused before anything is stored.
  const host = await storedRunHost(settings);
  if (!host.ok) return host;
  const bundled = await bundleDefinition(pipeline.value);
  if (!bundled.ok) return bundled;
  const { hash, bundle } = bundled.value;
  await store.saveDefinition(hash, bundle);
  const stored = { ...settings, ...(mark && { idempotency: mark }) };
  const pipelineId = pipeline.value.id;
  if (options.runs === "queued") {
    const queued = await store.enqueueRun({
      runId,
      pipelineId,
      definitionHash: hash,
      options: { ...stored, ctx, definition: fingerprint(pipeline.value).parts },
    });
    if (!queued.ok) return queued;
    return ok({ runId, pipelineId, definitionHash: hash, status: "queued" });
  }
  const started = await startRun(pipeline.value, {
    store,
    host: host.value,
    resumeWith: stored,
    runId,
    ctx,
  });
  if (!started.ok) return started;
  options.started(started.value);
  return ok({ runId, pipelineId, definitionHash: hash, status: "running" });
}

/** A served pipeline's name: a file or directory name, never a path. */
const PIPELINE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

async function pipelineOf(
  store: RunStore,
  request: StartRequest,
  dir: string,
): Promise<Result<PipelineDefinition>> {
  if (request.definition !== undefined) {
    const bundle = await store.loadDefinition(request.definition);
    if (!bundle.ok) return bundle;
    return loadBundle(request.definition, bundle.value);
  }
  const name = request.pipeline ?? "";
  const file = PIPELINE_NAME.test(name) ? servedPipelineFile(dir, name) : undefined;
  if (!file)
    return err(
      new StagechartError(
        "Validation/PipelineNotFound",
        `the served directory has no pipeline "${name}" (served: ${servedPipelines(dir).join(", ") || "none"})`,
        { pipeline: name },
      ),
    );
  const loaded: LoadResult<PipelineDefinition> = isWorkflowDirectory(file)
    ? await loadWorkflowPipeline(file, BUILTIN_TOOL_NAMES, { for: "run" })
    : await loadPipelineFile(file, { toolNames: BUILTIN_TOOL_NAMES });
  const problems = loaded.ok ? loaded.warnings.filter(isError) : loaded.diagnostics;
  if (!loaded.ok || problems.length > 0)
    return err(
      new StagechartError(
        "Validation/PipelineInvalid",
        `pipeline ${name} does not load: ${problems.map(formatDiagnostic).join("; ")}`,
        { pipeline: name },
      ),
    );
  return ok(loaded.value);
}

/** `<dir>/<name>.yaml`, `.yml`, or a workflow directory `<dir>/<name>`, whichever is there. */
function servedPipelineFile(dir: string, name: string): string | undefined {
  const candidates = [`${name}.yaml`, `${name}.yml`, name].map((file) => join(dir, file));
  return candidates.find(
    (file) =>
      existsSync(file) &&
      (statSync(file).isDirectory() ? isWorkflowDirectory(file) : !/\.script\.ya?ml$/.test(file)),
  );
}

/** The names of the pipelines the directory serves, sorted. */
export function servedPipelines(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      if (entry.isDirectory())
        return isWorkflowDirectory(join(dir, entry.name)) ? [entry.name] : [];
      const match = /^(.+)\.ya?ml$/.exec(entry.name);
      return match?.[1] && !/\.script$/.test(match[1]) ? [match[1]] : [];
    })
    .sort();
}

/** File models (`scripted:`, `replay:`) read a file: only one inside the served directory. */
const FILE_MODEL = /^(scripted|replay):(.+)$/;

function modelSpecOf(spec: string | undefined, dir: string): Result<string | undefined> {
  const file = spec === undefined ? undefined : FILE_MODEL.exec(spec);
  if (!spec || !file?.[1] || !file[2]) return ok(spec);
  const path = resolve(dir, file[2]);
  const inside = relative(resolve(dir), path);
  if (inside.startsWith("..") || isAbsolute(inside))
    return err(
      new StagechartError(
        "Validation/ModelSpecOutsideServed",
        `the model file ${file[2]} is outside the served directory`,
        { model: spec },
      ),
    );
  return ok(`${file[1]}:${path}`);
}
