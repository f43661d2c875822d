import * as z from "../zod.js";
import type { GuardFunction, StageHooks, TransitionHook } from "./contract.js";
import { isRecord } from "./contract.js";
import { DIAGNOSTIC_CODES, type DiagnosticCode, type Severity } from "./diagnostics.js";
import type { JsonSchema } from "./json-schema.js";
import {
  descriptionSchema,
  grantsSchema,
  guardsSchema,
  hooksSchema,
  jsonSchemaObject,
  nextSchema,
  overrideSchema,
  type PipelineForm,
  pipelineBudgetSchema,
  pipelineIdSchema,
  reopenableSchema,
  stageIdSchema,
  stagesSchema,
  transitionHookSchema,
  transitionSchema,
} from "./pipeline-schema.js";
import {
  ENDS,
  type OverrideReach,
  type PipelineBudget,
  type PipelineDefinition,
  type Transition,
} from "./pipeline-types.js";
import { type StageEntry, stageEntrySchema } from "./stage-entry-schema.js";
import { KEBAB_CASE } from "./stage-schema.js";
import type { DataPath } from "./yaml-positions.js";

/** Reports a problem at a path of the pipeline's own source. */
export type Report = (
  path: DataPath,
  code: DiagnosticCode,
  message: string,
  severity?: Severity,
) => void;

/** A pipeline's fields as far as they parsed: what the checks and the assembly work from. */
export interface PipelineDraft {
  form: PipelineForm;
  id?: string;
  description?: string;
  context?: JsonSchema;
  entry?: string;
  /** Every key under `stages`, in order, whether or not its entry parsed. */
  stageIds: Set<string>;
  entries: Record<string, StageEntry>;
  next: Record<string, Transition>;
  /** False when some transition did not parse, so the topology is not fully known. */
  nextComplete: boolean;
  grants: PipelineDefinition["grants"];
  guards: Record<string, GuardFunction>;
  hooks: Record<string, StageHooks>;
  override?: OverrideReach;
  reopenable?: boolean;
  budget?: PipelineBudget;
  onTransition?: TransitionHook;
}

/** Parses each field and entry on its own, reporting every shape problem; unknown top-level keys are ignored. */
export function readDraft(form: PipelineForm, data: unknown, report: Report): PipelineDraft {
  const draft: PipelineDraft = {
    form,
    stageIds: new Set(),
    entries: {},
    next: {},
    nextComplete: true,
    grants: { approve: [], deny: [] },
    guards: {},
    hooks: {},
  };
  if (!isRecord(data)) {
    report(
      [],
      DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
      "a pipeline maps field names (id, entry, stages, next, …) to values",
    );
    return draft;
  }
  const field = <T>(key: string, schema: z.ZodMiniType<T>) =>
    parseAt(schema, data[key], [key], report);
  const optional = <T>(key: string, schema: z.ZodMiniType<T>) =>
    data[key] === undefined ? undefined : field(key, schema);

  const id = field("id", pipelineIdSchema);
  const description = optional("description", descriptionSchema);
  const context = optional("context", jsonSchemaObject);
  const entry = field("entry", stageIdSchema);
  if (id !== undefined) draft.id = id;
  if (description !== undefined) draft.description = description;
  if (context !== undefined) draft.context = context;
  if (entry !== undefined) draft.entry = entry;
  readStages(draft, field("stages", stagesSchema), report);
  const next = optional("next", nextSchema);
  draft.nextComplete = data.next === undefined || next !== undefined;
  readNext(draft, next ?? {}, report);
  const grants = optional("grants", grantsSchema);
  draft.grants = {
    approve: grants?.approve ?? [],
    deny: grants?.deny ?? [],
    ...(grants?.timeout !== undefined && { timeout: grants.timeout }),
  };
  const override = optional("override", overrideSchema);
  if (override !== undefined) draft.override = override;
  const reopenable = optional("reopenable", reopenableSchema);
  if (reopenable !== undefined) draft.reopenable = reopenable;
  const budget = optional("budget", pipelineBudgetSchema);
  if (budget !== undefined) draft.budget = budget as PipelineBudget;
  // A YAML file's code references are functions by now (see code-reference.ts).
  const onTransition = optional("onTransition", transitionHookSchema);
  if (onTransition !== undefined) draft.onTransition = data.onTransition as TransitionHook;
  // Checked, then kept as given: a hooks object may be a class instance whose methods use `this`.
  if (optional("guards", guardsSchema)) draft.guards = data.guards as PipelineDraft["guards"];
  if (optional("hooks", hooksSchema)) draft.hooks = data.hooks as PipelineDraft["hooks"];
  return draft;
}

function readNext(draft: PipelineDraft, next: Record<string, unknown>, report: Report): void {
  for (const [from, raw] of Object.entries(next)) {
    const transition = parseAt(transitionSchema, raw, ["next", from], report);
    if (transition) draft.next[from] = transition;
    else draft.nextComplete = false;
  }
}

function readStages(
  draft: PipelineDraft,
  stages: Record<string, unknown> | undefined,
  report: Report,
): void {
  if (stages === undefined) return;
  if (Object.keys(stages).length === 0) {
    report(
      ["stages"],
      DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
      "stages: declare at least one stage",
    );
  }
  const schema = stageEntrySchema(draft.form);
  for (const [id, raw] of Object.entries(stages)) {
    draft.stageIds.add(id);
    if (ENDS.has(id)) {
      report(
        ["stages", id],
        DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
        `stages.${id}: done, fail and cancel are the pipeline's ends; no stage may take those ids`,
      );
    } else if (!KEBAB_CASE.test(id)) {
      report(
        ["stages", id],
        DIAGNOSTIC_CODES.idInvalid,
        `stages.${id}: a stage id must be kebab-case: lowercase words joined by single hyphens`,
      );
    }
    const entry = parseAt(schema, raw, ["stages", id], report);
    if (entry) draft.entries[id] = entry;
  }
}

function parseAt<T>(schema: z.ZodMiniType<T>, value: unknown, at: DataPath, report: Report) {
  let parsed: ReturnType<typeof schema.safeParse>;
  try {
    parsed = schema.safeParse(value);
  } catch (error) {
    // A TypeScript spec can hold an object that contains itself, which zod refuses by throwing.
    if (!(error instanceof z.$ZodCyclicError)) throw error;
    report(at, DIAGNOSTIC_CODES.pipelineDefinitionInvalid, `${where(at)}: contains itself`);
    return undefined;
  }
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const inner = issue.path.filter((p): p is string | number => typeof p !== "symbol");
    const path = [...at, ...inner];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        report(
          [...path, key],
          DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
          `${where(path)}: unknown key "${key}"; ${issue.message}`,
        );
      }
    } else if (valueAt(value, inner) === undefined) {
      report(
        path,
        DIAGNOSTIC_CODES.pipelineMissingField,
        `missing required field "${where(path)}"`,
      );
    } else {
      report(path, codeFor(path, issue), `${where(path)}: ${issue.message}`);
    }
  }
  return undefined;
}

function codeFor(path: DataPath, issue: z.core.$ZodIssue): DiagnosticCode {
  if (path.length === 1 && path[0] === "id") return DIAGNOSTIC_CODES.pipelineIdInvalid;
  if (path.includes("timeout")) return DIAGNOSTIC_CODES.waitTimeoutInvalid;
  if (path[0] === "grants" && issue.code === "invalid_format") {
    return DIAGNOSTIC_CODES.grantRuleInvalid;
  }
  return DIAGNOSTIC_CODES.pipelineDefinitionInvalid;
}

function valueAt(value: unknown, path: DataPath): unknown {
  let at = value;
  for (const segment of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string | number, unknown>)[segment];
  }
  return at;
}

/** A path as an author reads it: `next.review[1].when`. */
export function where(path: DataPath): string {
  return path
    .map((segment, i) =>
      typeof segment === "number" ? `[${segment}]` : i === 0 ? segment : `.${segment}`,
    )
    .join("");
}
