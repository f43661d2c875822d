import type { CodeProblem } from "./code-reference.js";
import {
  byPosition,
  DIAGNOSTIC_CODES,
  type Diagnostic,
  type DiagnosticCode,
  diagnostic,
  isError,
  type LoadResult,
  type Position,
  uniqueDiagnostics,
} from "./diagnostics.js";
import { checkJsonSchema, type JsonSchema } from "./json-schema.js";
import { type PipelineDraft, type Report, readDraft, where } from "./pipeline-draft.js";
import { checkGraph } from "./pipeline-graph-checks.js";
import { checkMap, checkMapLists } from "./pipeline-map-checks.js";
import type { PipelineForm } from "./pipeline-schema.js";
import { checkStageContracts, type LoadedStage } from "./pipeline-stage-checks.js";
import {
  type Condition,
  DONE,
  ENDS,
  type PipelineDefinition,
  type PipelineStage,
  type Transition,
} from "./pipeline-types.js";
import type { StageEntry } from "./stage-entry-schema.js";
import type { DataPath } from "./yaml-positions.js";

/**
 * The one place pipeline rules live: YAML files and `definePipeline` specs both come through
 * here, are parsed field by field, have their stages resolved, and are checked as a whole.
 */

export interface PipelineSource {
  form: PipelineForm;
  /** Where diagnostics about the pipeline point: its file, or a name for a TypeScript spec. */
  file: string;
  data: unknown;
  locate(path: DataPath): Position;
  /** The file the pipeline was read from, kept on the definition. */
  origin?: string;
  /** A YAML file's code references: those that did not resolve, and the modules that did. */
  code?: { problems: CodeProblem[]; modules: Record<string, string> };
}

/** What became of one stage entry: the stage, or why not (reported at the entry's key). */
export type ResolvedStage =
  | ({ ok: true; diagnostics: Diagnostic[] } & LoadedStage)
  | { ok: false; diagnostics: Diagnostic[]; code: DiagnosticCode; message: string };

export type StageResolver = (id: string, entry: StageEntry) => Promise<ResolvedStage>;

/** Normalises and checks a pipeline. Never throws: the definition, or every problem found. */
export async function buildPipeline(
  source: PipelineSource,
  resolveStage: StageResolver,
  toolNames: readonly string[],
): Promise<LoadResult<PipelineDefinition>> {
  const diagnostics: Diagnostic[] = [];
  const report: Report = (path, code, message, severity) =>
    diagnostics.push(diagnostic(source.file, source.locate(path), code, message, severity));
  const draft = readDraft(source.form, source.data, report);
  for (const problem of source.code?.problems ?? [])
    report(problem.path, problem.code, `${where(problem.path)}: ${problem.message}`);

  const loaded: Record<string, LoadedStage> = {};
  for (const [id, entry] of Object.entries(draft.entries)) {
    const resolved = await resolveStage(id, entry);
    diagnostics.push(...resolved.diagnostics);
    if (resolved.ok) loaded[id] = resolved;
    else report(["stages", id, entry.key], resolved.code, `stages.${id}: ${resolved.message}`);
  }

  checkContext(draft.context, report);
  checkEntry(draft, report);
  checkTransitions(draft, report);
  checkHooks(draft, loaded, report);
  checkBudgets(draft, loaded, report);
  checkMapLists(draft, loaded, report);
  if (draft.nextComplete) checkGraph(draft, report);
  const pipelineName = draft.id ?? source.file;
  diagnostics.push(...checkStageContracts(pipelineName, draft, loaded, toolNames, report));
  return finish(source, draft, loaded, diagnostics);
}

function checkContext(context: JsonSchema | undefined, report: Report): void {
  if (context === undefined) return;
  if (context.type !== "object") {
    report(
      ["context"],
      DIAGNOSTIC_CODES.pipelineContextInvalid,
      "context must have `type: object` at its root: it describes the fields of ctx",
    );
    return;
  }
  const compiled = checkJsonSchema(context);
  if (compiled.ok) return;
  for (const problem of compiled.error) {
    const path = ["context", ...problem.path];
    report(
      path,
      DIAGNOSTIC_CODES.pipelineContextInvalid,
      `${where(path)} is not valid JSON Schema: ${problem.message}`,
    );
  }
}

function checkEntry(draft: PipelineDraft, report: Report): void {
  if (draft.entry === undefined || draft.stageIds.has(draft.entry)) return;
  report(
    ["entry"],
    DIAGNOSTIC_CODES.pipelineEntryUnknown,
    `entry "${draft.entry}" names no stage; the stages are ${[...draft.stageIds].join(", ") || "none"}`,
  );
}

function checkTransitions(draft: PipelineDraft, report: Report): void {
  const isStage = (id: string) => draft.stageIds.has(id);
  const groupOf = new Map<string, string>();
  for (const [from, transition] of Object.entries(draft.next)) {
    if (!isStage(from)) {
      report(
        ["next", from],
        DIAGNOSTIC_CODES.pipelineTargetUnknown,
        `next.${from}: there is no stage "${from}" to leave`,
      );
    }
    if (transition.kind === "parallel") {
      checkParallel(draft, from, transition, groupOf, report);
      continue;
    }
    if (transition.kind === "map") {
      checkMap(draft, from, transition, groupOf, report);
      continue;
    }
    const plain = transition.rules.length === 1 && transition.rules[0]?.when === undefined;
    transition.rules.forEach((rule, i) => {
      const at = ["next", from, i];
      if (!ENDS.has(rule.to) && !isStage(rule.to)) {
        const path = plain ? ["next", from] : [...at, "to"];
        report(
          path,
          DIAGNOSTIC_CODES.pipelineTargetUnknown,
          `${where(path)}: "${rule.to}" is not a stage of this pipeline, done, fail or cancel`,
        );
      }
      if (rule.when) checkCondition(draft, rule.when, [...at, "when"], report);
    });
  }
}

function checkParallel(
  draft: PipelineDraft,
  from: string,
  group: Extract<Transition, { kind: "parallel" }>,
  groupOf: Map<string, string>,
  report: Report,
): void {
  const at = ["next", from];
  const { siblings } = group;
  if (siblings.length < 2) {
    report(
      [...at, "parallel"],
      DIAGNOSTIC_CODES.invalidParallelPlan,
      `next.${from}.parallel: a parallel group runs at least two siblings, this one ${siblings.length}; use a plain successor for one`,
    );
  }
  const listed = new Set<string>();
  siblings.forEach((sibling, i) => {
    const path = [...at, "parallel", i];
    const problem = (code: DiagnosticCode, message: string) =>
      report(path, code, `${where(path)}: ${message}`);
    if (!draft.stageIds.has(sibling)) {
      problem(
        DIAGNOSTIC_CODES.pipelineTargetUnknown,
        `"${sibling}" is not a stage of this pipeline`,
      );
    } else if (listed.has(sibling)) {
      problem(DIAGNOSTIC_CODES.invalidParallelPlan, `"${sibling}" is listed twice`);
    } else if (sibling === from) {
      problem(DIAGNOSTIC_CODES.invalidParallelPlan, `${from} cannot fan out to itself`);
    } else if (groupOf.has(sibling)) {
      problem(
        DIAGNOSTIC_CODES.invalidParallelPlan,
        `"${sibling}" is already a sibling in the group after ${groupOf.get(sibling)}; a stage belongs to one parallel group`,
      );
    }
    listed.add(sibling);
    groupOf.set(sibling, from);
    if (draft.next[sibling] !== undefined && sibling !== from) {
      report(
        ["next", sibling],
        DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
        `next.${sibling}: ${sibling} is a parallel sibling (after ${from}), so it has no transition of its own; the group's join decides what runs next`,
      );
    }
  });
  if (listed.has(group.join)) {
    report(
      [...at, "join"],
      DIAGNOSTIC_CODES.invalidParallelPlan,
      `next.${from}.join: "${group.join}" is a sibling of this group; a join runs after the group, as a stage of its own`,
    );
  } else if (group.join !== DONE && !draft.stageIds.has(group.join)) {
    report(
      [...at, "join"],
      DIAGNOSTIC_CODES.joinDangling,
      `next.${from}.join: "${group.join}" names no stage of this pipeline; a join is a stage id or done`,
    );
  }
  if (group.policy.kind === "quorum" && (group.policy.k < 1 || group.policy.k > siblings.length)) {
    report(
      [...at, "policy", "quorum"],
      DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
      `next.${from}.policy.quorum: ${group.policy.k} is not between 1 and the group's ${siblings.length} siblings`,
    );
  }
}

function checkCondition(
  draft: PipelineDraft,
  condition: Condition,
  at: DataPath,
  report: Report,
): void {
  if ("all" in condition || "any" in condition) {
    const [key, list] = "all" in condition ? ["all", condition.all] : ["any", condition.any];
    for (const [i, inner] of list.entries()) checkCondition(draft, inner, [...at, key, i], report);
  } else if ("not" in condition) {
    checkCondition(draft, condition.not, [...at, "not"], report);
  } else if ("visits" in condition && !draft.stageIds.has(condition.visits)) {
    const path = [...at, "visits"];
    report(
      path,
      DIAGNOSTIC_CODES.pipelineTargetUnknown,
      `${where(path)}: "${condition.visits}" is not a stage of this pipeline`,
    );
  } else if ("guard" in condition && !Object.hasOwn(draft.guards, condition.guard)) {
    const path = [...at, "guard"];
    const why = `the pipeline's guards are ${Object.keys(draft.guards).join(", ") || "none"}`;
    report(
      path,
      DIAGNOSTIC_CODES.guardUnknown,
      `${where(path)}: no guard "${condition.guard}": ${why}`,
    );
  }
}

function checkHooks(
  draft: PipelineDraft,
  loaded: Record<string, LoadedStage>,
  report: Report,
): void {
  for (const [id, hooks] of Object.entries(draft.hooks)) {
    const stage = loaded[id]?.stage;
    if (!draft.stageIds.has(id) || (stage && stage.kind !== "llm")) {
      report(
        ["hooks", id],
        DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
        `hooks.${id}: hooks attach to the LLM stages of this pipeline, and "${id}" is not one`,
      );
    } else if (hooks.exit && stage?.kind === "llm" && stage.outputFields) {
      report(
        ["hooks", id, "exit"],
        DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
        `hooks.${id}.exit: stages.${id} already lists its output; write the output one way, the list or the exit hook`,
      );
    }
  }
}

/** A stage budget limits an LLM stage's model calls: it names one of this pipeline's. */
function checkBudgets(
  draft: PipelineDraft,
  loaded: Record<string, LoadedStage>,
  report: Report,
): void {
  for (const id of Object.keys(draft.budget?.stages ?? {})) {
    const stage = loaded[id]?.stage;
    if (!draft.stageIds.has(id) || (stage && stage.kind !== "llm")) {
      report(
        ["budget", "stages", id],
        DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
        `budget.stages.${id}: a stage budget limits the model calls of an LLM stage of this pipeline, and "${id}" is not one (a sub-pipeline's stages take budgets in its own file; budget.run covers the whole run)`,
      );
    }
  }
}

function finish(
  source: PipelineSource,
  draft: PipelineDraft,
  loaded: Record<string, LoadedStage>,
  found: Diagnostic[],
): LoadResult<PipelineDefinition> {
  const diagnostics = uniqueDiagnostics(found).sort(byPosition);
  const { id, entry } = draft;
  if (diagnostics.some(isError) || id === undefined || entry === undefined) {
    return { ok: false, diagnostics };
  }
  const stages: Record<string, PipelineStage> = {};
  for (const [stageId, { stage }] of Object.entries(loaded)) stages[stageId] = stage;
  return {
    ok: true,
    value: {
      id,
      ...(draft.description !== undefined && { description: draft.description }),
      context: draft.context ?? { type: "object" },
      entry,
      stages,
      next: draft.next,
      grants: draft.grants,
      guards: draft.guards,
      hooks: draft.hooks,
      ...(draft.override !== undefined && { override: draft.override }),
      ...(draft.reopenable !== undefined && { reopenable: draft.reopenable }),
      ...(draft.budget !== undefined && { budget: draft.budget }),
      ...(draft.onTransition !== undefined && { onTransition: draft.onTransition }),
      ...(source.origin !== undefined && { file: source.origin }),
      ...(source.code &&
        Object.keys(source.code.modules).length > 0 && {
          codeModules: source.code.modules,
        }),
    },
    warnings: diagnostics,
  };
}
