import { dirname, join } from "node:path";
import { isRecord } from "../contract.js";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  type DiagnosticCode,
  diagnostic,
  isError,
} from "../diagnostics.js";
import { readDefinitionText } from "../files.js";
import type { DataPath } from "../yaml-positions.js";
import { parseYamlSource } from "../yaml-source.js";
import { parsePhaseFile } from "./parse-phase.js";
import { phasePathInside } from "./path-safety.js";
import { type PhaseEntry, WORKFLOW_FILE, type WorkflowDefinition } from "./types.js";

const COMMAND_NAME = /^[a-zA-Z0-9_-]+$/;
const SHOW_VALUES = ["user", "workflows"] as const;

/** One workflow directory of a root, or every problem that keeps it out. */
export async function parseWorkflow(
  root: string,
  key: string,
): Promise<{ workflow?: WorkflowDefinition; diagnostics: Diagnostic[] }> {
  const file = join(root, key, WORKFLOW_FILE);
  const read = await readDefinitionText(file, "workflow");
  if (!read.ok) return { diagnostics: read.diagnostics };
  const parsed = parseYamlSource(read.text);
  if (!parsed.ok) {
    const broken = parsed.problems.map((p) =>
      diagnostic(file, p, DIAGNOSTIC_CODES.pipelineYamlInvalid, `broken YAML: ${p.message}`),
    );
    return { diagnostics: broken };
  }
  const { data, locate } = parsed.value;
  const diagnostics: Diagnostic[] = [];
  const report = (
    path: DataPath,
    message: string,
    code: DiagnosticCode = DIAGNOSTIC_CODES.workflowInvalid,
  ) => diagnostics.push(diagnostic(file, locate(path), code, message));
  if (!isRecord(data)) {
    report([], "workflow.yaml must map field names to values");
    return { diagnostics };
  }

  const text = (field: string): string | undefined => {
    const value = data[field];
    if (value === undefined) return undefined;
    if (typeof value === "string") return value;
    report([field], `${field} must be a string`);
    return undefined;
  };
  const name = text("name");
  if (name === undefined || name.trim() === "")
    report(["name"], "name is required and must not be empty");

  const show = data.show ?? "user";
  if (!SHOW_VALUES.includes(show as "user"))
    report(["show"], `show must be "user" or "workflows", not ${JSON.stringify(show)}`);
  const userFacing = show !== "workflows";
  const commandName = text("commandName");
  if (commandName === undefined || commandName === "") {
    if (userFacing) report(["commandName"], 'commandName is required unless show is "workflows"');
  } else if (!COMMAND_NAME.test(commandName))
    report(["commandName"], "commandName may hold only letters, digits, _ and -");
  const initialMessage = text("initialMessage");
  if (userFacing && (initialMessage === undefined || initialMessage.trim() === ""))
    report(["initialMessage"], 'initialMessage is required unless show is "workflows"');

  const loopable = data.loopable ?? true;
  if (typeof loopable !== "boolean") report(["loopable"], "loopable must be true or false");

  const phases: PhaseEntry[] = [];
  if (!Array.isArray(data.phases) || data.phases.length === 0) {
    report(["phases"], "phases must list at least one phase file or { subworkflow: <key> }");
  } else {
    for (const [index, entry] of data.phases.entries()) {
      const at: DataPath = ["phases", index];
      if (
        isRecord(entry) &&
        typeof entry.subworkflow === "string" &&
        Object.keys(entry).length === 1
      ) {
        // Located only if reported: locating may parse the file again (parseYamlSource).
        phases.push({
          kind: "subworkflow",
          key: entry.subworkflow,
          get at() {
            return locate(at);
          },
        });
      } else if (typeof entry === "string") {
        const target = phasePathInside(root, dirname(file), entry);
        if (target === undefined) {
          report(
            at,
            `phase path ${entry} leads outside the workflows root ${root}`,
            DIAGNOSTIC_CODES.workflowPathUnsafe,
          );
          continue;
        }
        const phase = await parsePhaseFile(target);
        diagnostics.push(...phase.diagnostics);
        if (phase.phase) phases.push(phase.phase);
      } else {
        report(at, "a phase is a path to a .md file or { subworkflow: <key> }");
      }
    }
  }
  reportDuplicateIds(phases, (id) =>
    report(
      ["phases"],
      `phase id "${id}" is used twice in this workflow`,
      DIAGNOSTIC_CODES.workflowPhaseInvalid,
    ),
  );

  if (diagnostics.some(isError)) return { diagnostics };
  const workflow: WorkflowDefinition = {
    key,
    file,
    name: name as string,
    ...(commandName && { commandName }),
    ...(initialMessage !== undefined && { initialMessage }),
    show: show as WorkflowDefinition["show"],
    loopable: loopable as boolean,
    phases,
  };
  return { workflow, diagnostics };
}

function reportDuplicateIds(phases: readonly PhaseEntry[], report: (id: string) => void): void {
  const seen = new Set<string>();
  for (const phase of phases) {
    if (phase.kind !== "phase") continue;
    if (seen.has(phase.id)) report(phase.id);
    seen.add(phase.id);
  }
}
