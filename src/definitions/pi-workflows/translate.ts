import type { StageHooks } from "../contract.js";
import { DIAGNOSTIC_CODES, type Diagnostic, diagnostic, START } from "../diagnostics.js";
import type {
  ConditionSpec,
  PipelineSpec,
  RuleSpec,
  StageSpec,
  TransitionSpec,
} from "../pipeline-spec.js";
import { phaseStage, type RunPlace } from "./phase-stage.js";
import { stepHooks } from "./step-tool.js";
import type { PhaseDefinition, PhaseEntry, WorkflowDefinition, WorkflowSet } from "./types.js";

const actionIs = (action: string): ConditionSpec => ({ path: "output.action", equals: action });

/**
 * A workflow as a pipeline: each phase a stage with its phase id, each `{subworkflow: key}` a
 * sub-pipeline stage whose pipeline id is the key — so the pi-workflows path stack is the run's
 * actor tree. On `output.action`: `next` goes to the following entry (or ends the workflow,
 * returning to its parent), `loop` to the workflow's first entry (only if it is loopable),
 * `cancel` ends the run cancelled; a subworkflow that ended cancelled cancels its parent too.
 * `workflows` holds every workflow a reference may name; references are checked.
 *
 * `place` is where the workflow runs in a run of `place.root`: its phases' prompts name the
 * root, the path down to them and what follows the workflow, so a subworkflow used in two places
 * is two pipelines. `built` holds each one by workflow and place, so it is built once however
 * many of the pipelines loaded with it use it there.
 */
export function workflowPipeline(
  workflow: WorkflowDefinition,
  workflows: WorkflowSet,
  toolNames: readonly string[],
  built = new Map<string, PipelineSpec>(),
  place: RunPlace = { root: workflow, trail: [workflow.name] },
): { spec?: PipelineSpec; diagnostics: Diagnostic[] } {
  const builtKey = JSON.stringify([workflow.key, place.root.key, place.trail, place.after ?? null]);
  const done = built.get(builtKey);
  if (done) return { spec: done, diagnostics: [] };
  const diagnostics: Diagnostic[] = [];
  const ids = stageIds(workflow.phases);
  const stages: Record<string, StageSpec> = {};
  const next: Record<string, TransitionSpec> = {};
  const hooks: Record<string, StageHooks> = {};
  const entry = ids[0] as string;
  for (const [index, phase] of workflow.phases.entries()) {
    const id = ids[index] as string;
    const successor = ids[index + 1] ?? "done";
    const after = nameOf(workflow.phases[index + 1]) ?? place.after;
    if (phase.kind === "subworkflow") {
      const child = workflows.get(phase.key);
      const sub =
        child &&
        workflowPipeline(child, workflows, toolNames, built, {
          root: place.root,
          trail: [...place.trail, child.name],
          ...(after !== undefined && { after }),
        });
      diagnostics.push(...(sub?.diagnostics ?? []));
      if (!sub?.spec) return { diagnostics };
      stages[id] = { pipeline: sub.spec };
      next[id] = [
        { when: { all: [{ path: "verdict", equals: "fail" }, actionIs("cancel")] }, to: "cancel" },
        { to: successor },
      ];
      continue;
    }
    const previous = nameOf(workflow.phases[index - 1]);
    const stage = phaseStage(
      phase,
      {
        workflow,
        index,
        run: place,
        first: firstPhase(place.root, workflows) as PhaseDefinition,
        ...(previous !== undefined && { previous }),
        ...(after !== undefined && { next: after }),
      },
      toolNames,
    );
    if (!stage.ok) return { diagnostics: [...diagnostics, ...stage.diagnostics] };
    stages[id] = { stage: stage.value };
    hooks[id] = stepHooks;
    const rules: RuleSpec[] = [{ when: actionIs("next"), to: successor }];
    if (workflow.loopable) rules.push({ when: actionIs("loop"), to: entry });
    rules.push({ when: actionIs("cancel"), to: "cancel" });
    next[id] = rules;
  }
  const spec: PipelineSpec = {
    id: workflow.key,
    description: workflow.name,
    context: { type: "object", required: ["task"], properties: { task: { type: "string" } } },
    entry,
    stages,
    next,
    hooks,
  };
  built.set(builtKey, spec);
  return { spec, diagnostics };
}

/**
 * A phase's stage id is its phase id; a subworkflow's is its key, with `-2`, `-3`… when the
 * same key (or a phase id) already took it in this workflow.
 */
export function stageIds(phases: readonly PhaseEntry[]): string[] {
  const taken = new Set(phases.flatMap((p) => (p.kind === "phase" ? [p.id] : [])));
  return phases.map((phase) => {
    if (phase.kind === "phase") return phase.id;
    let id = phase.key;
    for (let n = 2; taken.has(id); n++) id = `${phase.key}-${n}`;
    taken.add(id);
    return id;
  });
}

/** The first concrete phase a run of `workflow` enters, through nested references. */
export function firstPhase(
  workflow: WorkflowDefinition,
  workflows: WorkflowSet,
): PhaseDefinition | undefined {
  const [first] = workflow.phases;
  if (first?.kind !== "subworkflow") return first;
  const child = workflows.get(first.key);
  return child && firstPhase(child, workflows);
}

const nameOf = (entry: PhaseEntry | undefined): string | undefined =>
  entry === undefined
    ? undefined
    : entry.kind === "phase"
      ? entry.name
      : `subworkflow ${entry.key}`;

/** Why a workflow cannot be run on its own: it is a subworkflow only. */
export function notRunnable(workflow: WorkflowDefinition): Diagnostic | undefined {
  if (workflow.show !== "workflows") return undefined;
  return diagnostic(
    workflow.file,
    START,
    DIAGNOSTIC_CODES.workflowNotRunnable,
    `workflow "${workflow.key}" has show: workflows, so it runs only as a subworkflow; run a workflow that uses it`,
  );
}
