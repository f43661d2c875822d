import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, extname, join, relative, resolve, sep } from "node:path";
import { fingerprint } from "../compiler/definition-hash.js";
import { moduleClosure } from "../definitions/code-reference.js";
import { isWorkflowDirectory } from "../definitions/pi-workflows/detect.js";
import { closureOf, loadWorkflowRoot } from "../definitions/pi-workflows/load.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { DefinitionBundle } from "../runtime/run-records.js";

/** A definition's files and the hash they load into: what `run --detach` stores. */
export interface HashedBundle {
  hash: string;
  bundle: DefinitionBundle;
}

/**
 * The files a loaded pipeline was read from, as a bundle keyed by the definition hash: a YAML
 * pipeline's file, its stage files and sub-pipelines; a pi-workflows workflow's directory and
 * those of the workflows it uses; the code modules a YAML pipeline names, with the modules they
 * import. Paths are relative to the folder that holds them all, so the bundle loads the same
 * anywhere. A pipeline built in code through the library has no files to carry:
 * `Validation/DefinitionNotBundlable`.
 */
export async function bundleDefinition(
  pipeline: PipelineDefinition,
): Promise<Result<HashedBundle>> {
  const file = pipeline.file === undefined ? undefined : resolve(pipeline.file);
  let files: string[];
  let root: string;
  if (file !== undefined && isWorkflowDirectory(file)) {
    // Its siblings are the workflows it may use: the bundle keeps it in its workflows root.
    files = await workflowFiles(file);
    root = dirname(file);
  } else if (file !== undefined && /\.ya?ml$/i.test(file)) {
    const found = yamlFiles(pipeline);
    if (!found.ok) return found;
    files = found.value;
    root = commonFolder(files);
  } else
    return err(
      notBundlable(pipeline.id, "it is not a YAML pipeline file or a pi-workflows directory"),
    );
  const bundle: DefinitionBundle = {
    entry: relative(root, file),
    files: Object.fromEntries(
      [...new Set(files)].sort().map((each) => [relative(root, each), readFileSync(each, "utf8")]),
    ),
  };
  return ok({ hash: fingerprint(pipeline).hash, bundle });
}

/** A YAML pipeline's own file, its code modules, and those of its stages and sub-pipelines. */
function yamlFiles(pipeline: PipelineDefinition): Result<string[]> {
  if (pipeline.file === undefined)
    return err(notBundlable(pipeline.id, "it was built in code, not loaded from a file"));
  const file = resolve(pipeline.file);
  const modules = Object.keys(pipeline.codeModules ?? {}).flatMap((module) =>
    moduleClosure(resolve(dirname(file), module)),
  );
  const files = [file, ...modules];
  for (const stage of Object.values(pipeline.stages)) {
    if (stage.kind === "llm") files.push(resolve(stage.definition.file));
    else if (stage.kind === "pipeline") {
      const nested = yamlFiles(stage.pipeline);
      if (!nested.ok) return nested;
      files.push(...nested.value);
    }
  }
  return ok(files);
}

/** The definition files of the workflow in `dir` and of every workflow it uses. */
async function workflowFiles(dir: string): Promise<string[]> {
  const root = await loadWorkflowRoot(dirname(dir));
  return closureOf(root, basename(dir)).flatMap((key) =>
    definitionFilesUnder(join(root.root, key)),
  );
}

function definitionFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && [".md", ".yaml", ".yml"].includes(extname(entry.name)))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The deepest folder holding every file. */
function commonFolder(files: string[]): string {
  let common = dirname(files[0] as string);
  while (!files.every((file) => file.startsWith(common.endsWith(sep) ? common : common + sep)))
    common = dirname(common);
  return common;
}

const notBundlable = (pipelineId: string, why: string): StagechartError =>
  new StagechartError(
    "Validation/DefinitionNotBundlable",
    `pipeline ${pipelineId} cannot be stored for a worker: ${why}`,
    { pipelineId },
  );
