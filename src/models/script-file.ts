import type { JsonValue } from "../definitions/contract.js";
import {
  DIAGNOSTIC_CODES,
  type DiagnosticCode,
  diagnostic,
  type LoadResult,
  type Position,
} from "../definitions/diagnostics.js";
import { readDefinitionText } from "../definitions/files.js";
import type { DataPath } from "../definitions/yaml-positions.js";
import { parseYamlSource } from "../definitions/yaml-source.js";
import type * as z from "../zod.js";
import { type ScriptEntry, scriptFileSchema } from "./script-schema.js";

export interface Script {
  file: string;
  /** Entries by `stageId` or `pipelineId/stageId`, in the order the calls consume them. */
  stages: Map<string, ScriptEntry[]>;
  /** Answers to ask stages by stage id, one per round of the stage. */
  answers?: Map<string, JsonValue[]>;
  /** Where a key of the file sits (`["stages", "plan"]`), for problems found in it later. */
  locate?: (path: DataPath) => Position;
}

export async function loadScriptFile(file: string): Promise<LoadResult<Script>> {
  const read = await readDefinitionText(file, "script");
  return read.ok ? parseScript(read.text, file) : read;
}

/** Loads a script from its YAML text. Never throws: the script, or every problem found. */
export function parseScript(text: string, file: string): LoadResult<Script> {
  const report = (at: Position, code: DiagnosticCode, message: string) =>
    diagnostic(file, at, code, message);
  const yaml = parseYamlSource(text);
  if (!yaml.ok) {
    return {
      ok: false,
      diagnostics: yaml.problems.map((p) =>
        report(p, DIAGNOSTIC_CODES.scriptYamlInvalid, p.message),
      ),
    };
  }
  const parsed = scriptFileSchema.safeParse(yaml.value.data);
  if (parsed.success) {
    return {
      ok: true,
      value: {
        file,
        stages: new Map(Object.entries(parsed.data.stages)),
        answers: new Map(Object.entries(parsed.data.answers ?? {}) as [string, JsonValue[]][]),
        locate: yaml.value.locate,
      },
      warnings: [],
    };
  }
  const diagnostics = parsed.error.issues
    .flatMap(explain)
    .map(({ path, message }) =>
      report(yaml.value.locate(path), DIAGNOSTIC_CODES.scriptInvalid, message),
    )
    .sort((a, b) => a.line - b.line || a.column - b.column);
  return { ok: false, diagnostics };
}

/** One message per problem, located at the offending key; one per key for unknown keys. */
function explain(issue: z.core.$ZodIssue): { path: DataPath; message: string }[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => at([...path, key], `unknown key; ${issue.message}`));
  }
  return [at(path, issue.message)];
}

/** The message prefixed with the path as an author reads it: `stages.plan[0].args: …`. */
function at(path: DataPath, message: string): { path: DataPath; message: string } {
  const where = path
    .map((segment, i) =>
      typeof segment === "number" ? `[${segment}]` : i === 0 ? segment : `.${segment}`,
    )
    .join("");
  return { path, message: where === "" ? message : `${where}: ${message}` };
}
