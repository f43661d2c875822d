import { readFile } from "node:fs/promises";
import { z } from "zod";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { PathList } from "./paths.js";

const pathList = z.object({
  pipelineId: z.string().min(1),
  strategy: z.enum(["shortest", "simple"]),
  ctx: z.record(z.string(), z.unknown()).optional(),
  paths: z.array(
    z.object({
      id: z.string().min(1),
      steps: z.array(z.object({ stage: z.string().min(1), outcome: z.string().min(1) })),
      end: z.enum(["done", "failed", "cancelled", "suspended"]),
    }),
  ),
});

/** A saved `stagechart paths --json` list, or `Validation/PathsFileInvalid` saying what is wrong. */
export async function readPathFile(file: string, pipelineId: string): Promise<Result<PathList>> {
  const invalid = (problem: string) =>
    err(new StagechartError("Validation/PathsFileInvalid", `${file} ${problem}`, { file }));
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    return invalid(`cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return invalid("is not JSON (save the output of stagechart paths --json)");
  }
  const parsed = pathList.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return invalid(`is not a path list: ${issue?.path.join(".") || "the top"}: ${issue?.message}`);
  }
  if (parsed.data.pipelineId !== pipelineId)
    return invalid(`holds paths of ${parsed.data.pipelineId}, not ${pipelineId}`);
  return ok({ ...parsed.data, ctx: parsed.data.ctx ?? {} });
}
