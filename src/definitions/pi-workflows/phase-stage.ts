import { type LoadResult, START } from "../diagnostics.js";
import { type StageDefinition, stageFromFrontmatter } from "../stage.js";
import { PHASE_FACTS_FIELD, type PhaseFacts, STEP_SCHEMA, STEP_TOOL } from "./step-tool.js";
import type { PhaseDefinition, WorkflowDefinition } from "./types.js";

/** How long one phase may go without a `workflow_step` call, per attempt. */
const PHASE_TURN_CAP = 40;

/** Where a phase sits in its workflow, for its prompt. */
export interface PhasePlace {
  workflow: WorkflowDefinition;
  /** 0-based, among the workflow's entries (subworkflow references included). */
  index: number;
  previous?: string;
  next?: string;
  /** The workflow's first concrete phase, found through its subworkflows. */
  first: PhaseDefinition;
}

/**
 * A phase as a stagechart stage: its id, the host's tools narrowed by its whitelist or
 * blacklist, `workflow_step` as the completion tool, and a body made of the task, the phase's
 * instructions (upstream `{placeholders}` resolved) and how to end it.
 */
export function phaseStage(
  phase: PhaseDefinition,
  place: PhasePlace,
  toolNames: readonly string[],
): LoadResult<StageDefinition> {
  const facts: PhaseFacts = { workflow: place.workflow.key, loopable: place.workflow.loopable };
  const frontmatter = {
    id: phase.id,
    name: `${phase.emoji} ${phase.name}`,
    description: `phase ${place.index + 1} of ${place.workflow.phases.length} of the workflow "${place.workflow.name}"`,
    allowedTools: allowedTools(phase, toolNames),
    completionTool: STEP_TOOL,
    completionSchema: STEP_SCHEMA,
    retryPolicy: { maxAttempts: 2, backoff: "none" },
    turnCap: PHASE_TURN_CAP,
    resolutionPolicy: "fail",
    [PHASE_FACTS_FIELD]: facts,
  };
  // Built as data, checked as a stage file's frontmatter would be: it has no text of its own,
  // so every position is the phase file's start.
  return stageFromFrontmatter(
    { data: frontmatter, locate: () => START, body: body(phase, place, toolNames), bodyLine: 1 },
    phase.file,
  );
}

/** A whitelist keeps the host tools it names, a blacklist the others; names match case-insensitively. */
export function allowedTools(phase: PhaseDefinition, toolNames: readonly string[]): string[] {
  if (!phase.tools) return [...toolNames];
  const named = (list: readonly string[]) => {
    const lower = new Set(list.map((name) => name.toLowerCase()));
    return (tool: string) => lower.has(tool.toLowerCase());
  };
  return "whitelist" in phase.tools
    ? toolNames.filter(named(phase.tools.whitelist))
    : toolNames.filter((tool) => !named((phase.tools as { blacklist: string[] }).blacklist)(tool));
}

function body(phase: PhaseDefinition, place: PhasePlace, toolNames: readonly string[]): string {
  const { workflow } = place;
  const blocked = toolNames.filter((tool) => !allowedTools(phase, toolNames).includes(tool));
  const names: Record<string, string> = {
    workflowName: workflow.name,
    workflowKey: workflow.key,
    phaseId: phase.id,
    phaseName: phase.name,
    phaseEmoji: phase.emoji,
    previousPhaseName: place.previous ?? "(start)",
    nextPhaseName: place.next ?? `(end of ${workflow.name})`,
    blockedToolsList: blocked.length > 0 ? blocked.join(", ") : "(none)",
    toolName: STEP_TOOL,
    firstPhaseId: place.first.id,
    firstPhaseName: place.first.name,
    firstPhaseEmoji: place.first.emoji,
  };
  // Names are text; only the task and the run id are filled in when the stage starts.
  const variables: Record<string, string> = {
    ...Object.fromEntries(
      Object.entries(names).map(([key, value]) => [key, escapeTemplate(value)]),
    ),
    description: "{{ctx.task}}",
    taskId: "{{ctx.workflowRunId}}",
  };
  const resolve = (text: string) => substitute(escapeTemplate(text), variables);
  const task = workflow.initialMessage ? resolve(workflow.initialMessage) : "Task: {{ctx.task}}";
  const loop = workflow.loopable
    ? `\`{action: "loop"}\` starts "${workflow.name}" again from its first phase.`
    : `Looping is disabled for "${workflow.name}".`;
  return [
    escapeTemplate(
      `You are in the workflow "${workflow.name}", phase ${place.index + 1} of ${workflow.phases.length}: ${phase.emoji} ${phase.name}.`,
    ),
    "",
    task,
    "",
    "## This phase",
    "",
    resolve(phase.instructions),
    "",
    "## Ending the phase",
    "",
    escapeTemplate(
      `When this phase is done, call \`${STEP_TOOL}\` with \`{action: "next", summary: "…"}\`; the next is ${names.nextPhaseName}. ${loop} \`{action: "cancel"}\`, called twice in a row, ends the whole workflow.`,
    ),
    "",
  ].join("\n");
}

/** Upstream text may hold `{{`: stagechart templates would read it, so it is made literal. */
const escapeTemplate = (text: string): string => text.replace(/\{\{/g, "\\{{");

/** `{name}` placeholders (seed-origins §A.2); unknown ones stay as written. */
const substitute = (text: string, variables: Record<string, string>): string =>
  text.replace(/(?<![{\\])\{(\w+)\}(?!\})/g, (whole, name: string) =>
    Object.hasOwn(variables, name) ? (variables[name] as string) : whole,
  );
