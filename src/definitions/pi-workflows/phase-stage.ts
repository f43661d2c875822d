import { type LoadResult, START } from "../diagnostics.js";
import { type StageDefinition, stageFromFrontmatter } from "../stage.js";
import { PHASE_FACTS_FIELD, type PhaseFacts, STEP_SCHEMA, STEP_TOOL } from "./step-tool.js";
import type { PhaseDefinition, WorkflowDefinition } from "./types.js";

/** How long one phase may go without a `workflow_step` call, per attempt. */
const PHASE_TURN_CAP = 40;

/** Where a workflow runs in a run: what its phases' prompts name beyond the workflow itself. */
export interface RunPlace {
  /**
   * The workflow the run started: its `initialMessage` heads every phase of the run, and its
   * name and key are `{workflowName}` and `{workflowKey}`, in subworkflows too.
   */
  root: WorkflowDefinition;
  /** The names of the workflows from the root down to this one. */
  trail: readonly string[];
  /** What follows this workflow's last entry, found outward; none at the root. */
  after?: string;
}

/** Where a phase sits in its workflow and in the run, for its prompt. */
export interface PhasePlace {
  workflow: WorkflowDefinition;
  /** 0-based, among the workflow's entries (subworkflow references included). */
  index: number;
  run: RunPlace;
  /** The entry before this phase in its workflow; none for its first. */
  previous?: string;
  /** The entry after this phase, in its workflow or else outward; none at the root's end. */
  next?: string;
  /** The root workflow's first concrete phase, found through its subworkflows. */
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

/** What ends the root workflow, as `{nextPhaseName}` names it. */
const END_OF_RUN = "DONE";

function body(phase: PhaseDefinition, place: PhasePlace, toolNames: readonly string[]): string {
  const { workflow, run, first } = place;
  const blocked = toolNames.filter((tool) => !allowedTools(phase, toolNames).includes(tool));
  const rootNames = {
    workflowName: run.root.name,
    workflowKey: run.root.key,
    firstPhaseId: first.id,
    firstPhaseName: first.name,
    firstPhaseEmoji: first.emoji,
  };
  // Names are text; the task, the run id and the step count are filled in when the stage starts.
  const filledIn = { description: "{{ctx.task}}", taskId: "{{ctx.workflowRunId}}" };
  const phaseVariables = {
    ...asText({
      ...rootNames,
      phaseId: phase.id,
      phaseName: phase.name,
      phaseEmoji: phase.emoji,
      previousPhaseName: place.previous ?? "(start)",
      nextPhaseName: place.next ?? END_OF_RUN,
      blockedToolsList: blocked.length > 0 ? blocked.join(", ") : "(none)",
      toolName: STEP_TOOL,
      breadcrumbPath: [...run.trail, phase.name].join(" > "),
    }),
    ...filledIn,
    globalStepCount: "{{ctx.stagesBefore}}",
  };
  const profiles = first.availableProfiles.join(", ");
  const headVariables = {
    ...asText({ ...rootNames, firstPhaseProfiles: profiles || "(none)" }),
    ...filledIn,
  };
  const task = run.root.initialMessage
    ? substitute(escapeTemplate(run.root.initialMessage), headVariables)
    : "Task: {{ctx.task}}";
  const next = place.next
    ? `the next is ${place.next}.`
    : `it is the last phase: the workflow is then ${END_OF_RUN}.`;
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
    substitute(escapeTemplate(phase.instructions), phaseVariables),
    "",
    "## Ending the phase",
    "",
    escapeTemplate(
      `When this phase is done, call \`${STEP_TOOL}\` with \`{action: "next", summary: "…"}\`; ${next} ${loop} \`{action: "cancel"}\`, called twice in a row, ends the whole workflow.`,
    ),
    "",
  ].join("\n");
}

/** Upstream text may hold `{{`: stagechart templates would read it, so it is made literal. */
const escapeTemplate = (text: string): string => text.replace(/\{\{/g, "\\{{");

/** Names made literal for a stagechart template. */
const asText = (names: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(names).map(([key, value]) => [key, escapeTemplate(value)]));

/** Upstream's `{name}` placeholders; unknown ones stay as written. */
const substitute = (text: string, variables: Record<string, string>): string =>
  text.replace(/(?<![{\\])\{(\w+)\}(?!\})/g, (whole, name: string) =>
    Object.hasOwn(variables, name) ? (variables[name] as string) : whole,
  );
