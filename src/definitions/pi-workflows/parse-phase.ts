import { isRecord } from "../contract.js";
import { DIAGNOSTIC_CODES, type Diagnostic, diagnostic, START } from "../diagnostics.js";
import { readDefinitionText } from "../files.js";
import { splitFrontmatter } from "../frontmatter.js";
import { KEBAB_CASE } from "../stage-schema.js";
import type { DataPath } from "../yaml-positions.js";
import type { PhaseDefinition } from "./types.js";

/** A phase file: frontmatter `id`, `name`, `emoji`, optional `tools` and profiles, and a body. */
export async function parsePhaseFile(
  file: string,
): Promise<{ phase?: PhaseDefinition; diagnostics: Diagnostic[] }> {
  const read = await readDefinitionText(file, "phase");
  if (!read.ok) return { diagnostics: read.diagnostics };
  const split = splitFrontmatter(read.text, file);
  if (!split.ok) return { diagnostics: split.diagnostics };
  const { data, locate, body, bodyLine } = split.value;
  const diagnostics: Diagnostic[] = [];
  const report = (path: DataPath, message: string) =>
    diagnostics.push(
      diagnostic(file, locate(path), DIAGNOSTIC_CODES.workflowPhaseInvalid, message),
    );
  const fields = isRecord(data) ? data : {};
  if (!isRecord(data)) report([], "the frontmatter must map field names to values");

  const required = (field: "id" | "name" | "emoji"): string => {
    const value = fields[field];
    if (typeof value === "string" && value.trim() !== "") return value;
    report([field], `${field} is required and must be a non-empty string`);
    return "";
  };
  const id = required("id");
  if (id !== "" && !KEBAB_CASE.test(id))
    report(
      ["id"],
      `id "${id}" must be kebab-case (lowercase words joined by single hyphens): it becomes a stage id`,
    );
  const name = required("name");
  const emoji = required("emoji");
  const tools = toolsOf(fields.tools, report);
  const availableProfiles = fields.availableProfiles ?? [];
  if (!isStringList(availableProfiles))
    report(["availableProfiles"], "availableProfiles must be a list of strings");
  const instructions = body.trim();
  if (instructions === "")
    diagnostics.push(
      diagnostic(
        file,
        { ...START, line: bodyLine },
        DIAGNOSTIC_CODES.workflowPhaseInvalid,
        "the phase has no instructions: its body is empty",
      ),
    );
  if (diagnostics.length > 0) return { diagnostics };
  return {
    phase: {
      kind: "phase",
      id,
      name,
      emoji,
      ...(tools && { tools }),
      availableProfiles: availableProfiles as string[],
      instructions,
      file,
    },
    diagnostics,
  };
}

function toolsOf(
  tools: unknown,
  report: (path: DataPath, message: string) => void,
): PhaseDefinition["tools"] {
  if (tools === undefined) return undefined;
  if (!isRecord(tools)) {
    report(["tools"], "tools must be { whitelist: [...] } or { blacklist: [...] }");
    return undefined;
  }
  const { whitelist, blacklist } = tools;
  if (whitelist !== undefined && blacklist !== undefined) {
    report(["tools"], "tools may set whitelist or blacklist, not both");
    return undefined;
  }
  const list = whitelist ?? blacklist;
  const field = whitelist !== undefined ? "whitelist" : "blacklist";
  if (list === undefined || !isStringList(list)) {
    report(["tools", field], `tools.${field} must be a list of tool names`);
    return undefined;
  }
  return whitelist !== undefined ? { whitelist: list } : { blacklist: list };
}

const isStringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string");
