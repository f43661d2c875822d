import { basename, dirname, join, resolve } from "node:path";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  diagnostic,
  isError,
  type LoadResult,
  START,
  uniqueDiagnostics,
} from "../diagnostics.js";
import {
  BUILTIN_TOOL_NAMES,
  createPipelineLoader,
  type PipelineLoader,
} from "../pipeline-loader.js";
import type { PipelineSpec } from "../pipeline-spec.js";
import type { PipelineDefinition } from "../pipeline-types.js";
import { KEBAB_CASE } from "../stage-schema.js";
import { workflowKeys } from "./detect.js";
import { parseWorkflow } from "./parse-workflow.js";
import { pruneReferences, subworkflowKeys } from "./references.js";
import { notRunnable, workflowPipeline } from "./translate.js";
import { WORKFLOW_FILE, type WorkflowDefinition } from "./types.js";

/** Every workflow of a workflows root, loaded and checked, and every problem found, by key. */
export interface WorkflowRoot {
  root: string;
  kept: Map<string, WorkflowDefinition>;
  /** Every key that has a directory, loaded or not, with its references (when it loaded). */
  references: Map<string, string[]>;
  diagnostics: Map<string, Diagnostic[]>;
}

export async function loadWorkflowRoot(root: string): Promise<WorkflowRoot> {
  const loaded = new Map<string, WorkflowDefinition>();
  const failed = new Set<string>();
  const diagnostics = new Map<string, Diagnostic[]>();
  const references = new Map<string, string[]>();
  for (const key of workflowKeys(root)) {
    const parsed = await parseWorkflow(root, key);
    const problems = [...parsed.diagnostics];
    if (!KEBAB_CASE.test(key))
      problems.push(
        diagnostic(
          join(root, key, WORKFLOW_FILE),
          START,
          DIAGNOSTIC_CODES.workflowInvalid,
          `the directory name "${key}" is the workflow's key and must be kebab-case (lowercase words joined by single hyphens)`,
        ),
      );
    diagnostics.set(key, problems);
    if (parsed.workflow && !problems.some(isError)) {
      loaded.set(key, parsed.workflow);
      references.set(key, subworkflowKeys(parsed.workflow));
    } else {
      failed.add(key);
      references.set(key, []);
    }
  }
  const pruned = pruneReferences(loaded, failed);
  for (const d of pruned.diagnostics) {
    const key = basename(dirname(d.file));
    diagnostics.set(key, [...(diagnostics.get(key) ?? []), d]);
  }
  return { root, kept: pruned.kept, references, diagnostics };
}

/** A key and every key it references, transitively. */
export function closureOf(root: WorkflowRoot, key: string): string[] {
  const seen = new Set([key]);
  const queue = [key];
  for (let i = 0; i < queue.length; i++) {
    for (const next of root.references.get(queue[i] as string) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return [...seen];
}

/**
 * Loads the workflow in directory `dir` (its siblings are its workflows root) as a pipeline, for
 * a host with `toolNames`. Problems are those of the workflow and of every workflow it uses.
 * A `show: workflows` one is refused `for: "run"` only: it may be drawn, listed and tested.
 */
export async function loadWorkflowPipeline(
  dir: string,
  toolNames: readonly string[] = BUILTIN_TOOL_NAMES,
  purpose: { for: "run" | "inspection" } = { for: "run" },
): Promise<LoadResult<PipelineDefinition>> {
  const root = await loadWorkflowRoot(dirname(resolve(dir)));
  const key = basename(resolve(dir));
  const workflow = root.kept.get(key);
  const refused = purpose.for === "run" && workflow && notRunnable(workflow);
  if (refused) return { ok: false, diagnostics: [refused] };
  const loaded = await pipelineOf(root, key, toolNames);
  return loaded.ok ? { ...loaded, value: { ...loaded.value, file: resolve(dir) } } : loaded;
}

/**
 * What loading several workflows of one root for a host with `toolNames` shares: each workflow
 * is translated and built once, however many of the loaded pipelines use it.
 */
export interface WorkflowSession {
  built: Map<string, PipelineSpec>;
  loader: PipelineLoader;
}

export const workflowSession = (toolNames: readonly string[]): WorkflowSession => ({
  built: new Map(),
  loader: createPipelineLoader(toolNames),
});

/**
 * The pipeline of workflow `key` of a loaded root, with the problems of everything it uses;
 * `session` (for the same host's `toolNames`) shares what other workflows of the root built.
 */
export async function pipelineOf(
  root: WorkflowRoot,
  key: string,
  toolNames: readonly string[],
  session: WorkflowSession = workflowSession(toolNames),
): Promise<LoadResult<PipelineDefinition>> {
  const found = uniqueDiagnostics(
    closureOf(root, key).flatMap((k) => root.diagnostics.get(k) ?? []),
  );
  const workflow = root.kept.get(key);
  if (!workflow || found.some(isError)) return { ok: false, diagnostics: found };
  const translated = workflowPipeline(workflow, root.kept, toolNames, session.built);
  if (!translated.spec) return { ok: false, diagnostics: [...found, ...translated.diagnostics] };
  const pipeline = await session.loader.pipelineSpec(translated.spec, root.root);
  if (!pipeline.ok) return { ok: false, diagnostics: [...found, ...pipeline.diagnostics] };
  return {
    ok: true,
    value: pipeline.value,
    warnings: [...found, ...translated.diagnostics, ...pipeline.warnings],
  };
}
