import { isRecord } from "./contract.js";
import { DIAGNOSTIC_CODES, type DiagnosticCode } from "./diagnostics.js";
import type { JsonSchema } from "./json-schema.js";
import { type PipelineDraft, type Report, where } from "./pipeline-draft.js";
import type { LoadedStage } from "./pipeline-stage-checks.js";
import { DONE, type MapGroup } from "./pipeline-types.js";

/**
 * The checks of a map group: its plan on its own (`checkMap`, beside the parallel groups'), and
 * its list's path against what the fan-out stage declares (`checkMapLists`, once stages are loaded).
 */

/** A ctx name a template can read: `{{ctx.<as>}}`. */
const CTX_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The ctx fields the run itself sets, which an item's name must not hide. */
const RUN_FIELDS = ["upstream", "stagesBefore", "override", "item", "itemIndex"];

export function checkMap(
  draft: PipelineDraft,
  from: string,
  group: MapGroup,
  groupOf: Map<string, string>,
  report: Report,
): void {
  const at = ["next", from];
  const problem = (path: (string | number)[], code: DiagnosticCode, message: string) =>
    report(path, code, `${where(path)}: ${message}`);
  const stagePath = [...at, "map", "stage"];
  const { stage } = group;
  if (!draft.stageIds.has(stage)) {
    problem(
      stagePath,
      DIAGNOSTIC_CODES.pipelineTargetUnknown,
      `"${stage}" is not a stage of this pipeline`,
    );
  } else if (stage === from) {
    problem(stagePath, DIAGNOSTIC_CODES.mapPlanInvalid, `${from} cannot map over itself`);
  } else if (groupOf.has(stage)) {
    problem(
      stagePath,
      DIAGNOSTIC_CODES.mapPlanInvalid,
      `"${stage}" is already a sibling in the group after ${groupOf.get(stage)}; a stage belongs to one group`,
    );
  } else if (draft.next[stage] !== undefined) {
    report(
      ["next", stage],
      DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
      `next.${stage}: ${stage} is the stage of the map group after ${from}, so it has no transition of its own; the group's join decides what runs next`,
    );
  }
  groupOf.set(stage, from);
  if (group.join === stage) {
    problem(
      [...at, "join"],
      DIAGNOSTIC_CODES.mapPlanInvalid,
      `"${stage}" is the stage this group maps; a join runs after the group, as a stage of its own`,
    );
  } else if (group.join !== DONE && !draft.stageIds.has(group.join)) {
    problem(
      [...at, "join"],
      DIAGNOSTIC_CODES.joinDangling,
      `"${group.join}" names no stage of this pipeline; a join is a stage id or done`,
    );
  }
  if (group.policy.kind === "quorum" && group.policy.k < 1) {
    problem(
      [...at, "policy", "quorum"],
      DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
      `${group.policy.k} is not at least 1`,
    );
  }
  if (group.as !== undefined) checkItemName(draft, [...at, "map", "as"], group.as, problem);
}

function checkItemName(
  draft: PipelineDraft,
  path: (string | number)[],
  name: string,
  problem: (path: (string | number)[], code: DiagnosticCode, message: string) => void,
): void {
  if (!CTX_NAME.test(name)) {
    problem(
      path,
      DIAGNOSTIC_CODES.mapPlanInvalid,
      `"${name}" is not a ctx name a template can read: letters, digits and _, not starting with a digit`,
    );
  } else if (RUN_FIELDS.includes(name)) {
    problem(
      path,
      DIAGNOSTIC_CODES.mapPlanInvalid,
      `"${name}" is a ctx field the run sets; choose another name`,
    );
  } else if (Object.hasOwn(propertiesOf(draft.context), name)) {
    problem(
      path,
      DIAGNOSTIC_CODES.mapPlanInvalid,
      `"${name}" is a field of the pipeline's context, which the item would hide; choose another name`,
    );
  }
}

/**
 * A map group's `over` names a list the fan-out stage declares: a field of an LLM stage's
 * completion schema (of its `output` list, for `output.`), of an ask stage's schema, or of the
 * pipeline's context. Code, command and sub-pipeline stages declare no output, so their paths
 * are checked at run time only.
 */
export function checkMapLists(
  draft: PipelineDraft,
  loaded: Record<string, LoadedStage>,
  report: Report,
): void {
  for (const [from, transition] of Object.entries(draft.next)) {
    if (transition.kind !== "map") continue;
    const [root, field] = transition.over.split(".") as [string, string];
    const declared = declaredBy(root, loaded[from]?.stage, draft.context);
    if (declared === undefined) continue;
    const path = ["next", from, "map", "over"];
    const schema = declared.fields[field];
    if (schema === undefined) {
      const known = Object.keys(declared.fields);
      report(
        path,
        DIAGNOSTIC_CODES.mapOverUnknown,
        `${where(path)}: ${transition.over} names "${field}", which ${declared.by} does not declare (${known.length > 0 ? `it declares ${known.join(", ")}` : "it declares none"})`,
      );
    } else if (
      transition.over.split(".").length === 2 &&
      isRecord(schema) &&
      typeof schema.type === "string" &&
      schema.type !== "array"
    ) {
      report(
        path,
        DIAGNOSTIC_CODES.mapOverUnknown,
        `${where(path)}: ${transition.over} is declared by ${declared.by} as ${schema.type}, not a list (type: array)`,
      );
    }
  }
}

/** The fields a path's root (`output`, `parsed`, `ctx`) can name, and who declares them. */
function declaredBy(
  root: string,
  stage: LoadedStage["stage"] | undefined,
  context: JsonSchema | undefined,
): { fields: Record<string, unknown>; by: string } | undefined {
  if (root === "ctx") {
    return context?.properties === undefined
      ? undefined
      : { fields: propertiesOf(context), by: "the pipeline's context" };
  }
  if (stage?.kind === "ask")
    return { fields: propertiesOf(stage.schema), by: `ask stage ${stage.id}'s schema` };
  if (stage?.kind !== "llm") return undefined;
  const { completionSchema, completionTool } = stage.definition;
  if (completionSchema === undefined) return undefined;
  const all = propertiesOf(completionSchema);
  const by = `${completionTool}'s completionSchema`;
  if (root === "parsed" || stage.outputFields === undefined) return { fields: all, by };
  const fields = Object.fromEntries(stage.outputFields.map((name) => [name, all[name] ?? {}]));
  return { fields, by: `stage ${stage.id}'s output list` };
}

function propertiesOf(schema: JsonSchema | undefined): Record<string, unknown> {
  const properties = schema?.properties;
  return isRecord(properties) ? properties : {};
}
