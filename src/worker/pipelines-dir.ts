import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { err, ok, type Result, StagechartError } from "../errors.js";

/** A YAML pipeline file (not a scripted model's script beside it). */
const isPipelineFile = (name: string) => /\.ya?ml$/.test(name) && !/\.script\.ya?ml$/.test(name);

/**
 * The ids of the pipelines defined in `dir` (its YAML pipeline files, read for their `id` only):
 * what `worker --pipelines <dir>` takes runs of. A run records the id of the pipeline it was
 * started with, and runs the definition stored with it: these files only say which runs are
 * this worker's, never what a run runs. `Validation/PipelinesDirNotFound` for a path that is
 * not a directory, `Validation/NoPipelines` for one without a pipeline file.
 */
export async function pipelineIdsIn(dir: string): Promise<Result<string[]>> {
  const isDir = await stat(dir).then(
    (found) => found.isDirectory(),
    () => false,
  );
  if (!isDir)
    return err(
      new StagechartError("Validation/PipelinesDirNotFound", `there is no directory ${dir}`, {
        dir,
      }),
    );
  const ids = new Set<string>();
  for (const name of (await readdir(dir)).filter(isPipelineFile).sort()) {
    const id = idOf(await readFile(join(dir, name), "utf8").catch(() => ""));
    if (id !== undefined) ids.add(id);
  }
  if (ids.size === 0)
    return err(
      new StagechartError(
        "Validation/NoPipelines",
        `${dir} holds no pipeline file (a YAML file with an id)`,
        { dir },
      ),
    );
  return ok([...ids]);
}

/** The `id` a pipeline file declares; undefined for a file that is not one. */
function idOf(text: string): string | undefined {
  try {
    const document: unknown = parse(text);
    if (typeof document !== "object" || document === null) return undefined;
    const { id, stages } = document as { id?: unknown; stages?: unknown };
    return typeof id === "string" && stages !== undefined ? id : undefined;
  } catch {
    return undefined;
  }
}
