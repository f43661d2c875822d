import { readFile } from "node:fs/promises";
import { isRecord } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import * as z from "../zod.js";
import type { PathList } from "./paths.js";
import { type Fixtures, fixturesNamingNoStage } from "./stand-ins.js";

const pathList = z.object({
  pipelineId: z.string().check(z.minLength(1)),
  strategy: z.enum(["shortest", "simple"]),
  cover: z.optional(z.enum(["states", "transitions", "boundaries"])),
  ctx: z.optional(z.record(z.string(), z.unknown())),
  untaken: z.optional(z.array(z.object({ transition: z.string(), reason: z.string() }))),
  paths: z.array(
    z.object({
      id: z.string().check(z.minLength(1)),
      steps: z.array(
        z.object({
          stage: z.string().check(z.minLength(1)),
          outcome: z.string().check(z.minLength(1)),
        }),
      ),
      end: z.enum(["done", "failed", "cancelled", "suspended"]),
    }),
  ),
});

const outcome = z.object({
  verdict: z.enum(["ok", "skip", "fail"]),
  reason: z.optional(z.string()),
  output: z.optional(z.unknown()),
});

const byOutcome = z.record(z.string().check(z.minLength(1)), outcome);

/**
 * By stage: one outcome for every path (it names a `verdict`), or one per outcome a path names
 * for the stage; told apart first, so an issue is reported in the shape the file meant.
 */
const fixtures = z.record(z.string().check(z.minLength(1)), z.unknown());
const fixtureOf = (value: unknown) => (isRecord(value) && "verdict" in value ? outcome : byOutcome);

type Invalid = (problem: string) => Result<never>;

/** A file's JSON, or why it is not. */
async function readJson(file: string, invalid: Invalid, hint: string): Promise<Result<unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    return invalid(`cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  try {
    return ok(JSON.parse(text));
  } catch {
    return invalid(`is not JSON (${hint})`);
  }
}

/**
 * A fixtures file, `{"<stageId>": {"verdict": "ok"|"skip"|"fail", "output"?, "reason"?}}`, or
 * per outcome a path names, `{"<stageId>": {"ok": {"verdict": "ok", …}, "fail": {…}}}`: what
 * each code or command stage ends with in a test run (a sub-pipeline's named by the path of stage
 * ids to it, `sandbox/run-tasks`), or `Validation/FixturesFileInvalid` — also when, `pipeline`
 * given, a key names none of its code or command stages.
 */
export async function readFixtureFile(
  file: string,
  pipeline?: PipelineDefinition,
): Promise<Result<Fixtures>> {
  const invalid = (problem: string) =>
    err(new StagechartError("Validation/FixturesFileInvalid", `${file} ${problem}`, { file }));
  const json = await readJson(file, invalid, 'write {"<stageId>": {"verdict": "ok"}}');
  if (!json.ok) return json;
  const notAMap = (
    issue: { path: PropertyKey[]; message: string } | undefined,
    at: string[] = [],
  ) =>
    invalid(
      `is not a fixture map: ${[...at, ...(issue?.path ?? [])].join(".") || "the top"}: ${issue?.message}`,
    );
  const parsed = fixtures.safeParse(json.value);
  if (!parsed.success) return notAMap(parsed.error.issues[0]);
  const read: Fixtures = {};
  for (const [stage, fixture] of Object.entries(parsed.data)) {
    const checked = fixtureOf(fixture).safeParse(fixture);
    if (!checked.success) return notAMap(checked.error.issues[0], [stage]);
    read[stage] = checked.data as Fixtures[string];
  }
  const unknown = pipeline ? fixturesNamingNoStage(pipeline, read) : [];
  if (pipeline && unknown.length > 0)
    return invalid(
      `names no code or command stage of ${pipeline.id}: ${unknown.join(", ")} (a sub-pipeline's stage is named <stage>/<inner stage>)`,
    );
  return ok(read);
}

/** A saved `stagechart paths --json` list, or `Validation/PathsFileInvalid` saying what is wrong. */
export async function readPathFile(file: string, pipelineId: string): Promise<Result<PathList>> {
  const invalid = (problem: string) =>
    err(new StagechartError("Validation/PathsFileInvalid", `${file} ${problem}`, { file }));
  const json = await readJson(file, invalid, "save the output of stagechart paths --json");
  if (!json.ok) return json;
  const parsed = pathList.safeParse(json.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return invalid(`is not a path list: ${issue?.path.join(".") || "the top"}: ${issue?.message}`);
  }
  if (parsed.data.pipelineId !== pipelineId)
    return invalid(`holds paths of ${parsed.data.pipelineId}, not ${pipelineId}`);
  return ok({ ...parsed.data, ctx: parsed.data.ctx ?? {} });
}
