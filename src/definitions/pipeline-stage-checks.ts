import { isRecord } from "./contract.js";
import { DIAGNOSTIC_CODES, type Diagnostic, diagnostic, type Position } from "./diagnostics.js";
import type { JsonSchema } from "./json-schema.js";
import type { PipelineDraft, Report } from "./pipeline-draft.js";
import type { PipelineDefinition, PipelineStage, Transition } from "./pipeline-types.js";
import type { StageDefinition } from "./stage.js";
import type { DataPath } from "./yaml-positions.js";

/** A resolved stage, and where the fields of its stage file sit when it came from one. */
export interface LoadedStage {
  stage: PipelineStage;
  locateField?: (path: DataPath) => Position;
}

/**
 * What an LLM stage needs from the pipeline it runs in: its id, the host's tools, the ctx fields
 * its template reads and the upstream results it indexes (a sub-pipeline's entry, those its
 * pipeline stage is entered with). Problems inside the stage file are reported there (at the key
 * or placeholder), naming the pipeline, since another pipeline may use the same file without
 * them. The entry's own way in depends on where the pipeline runs: by itself, it receives
 * nothing (`entryUpstreamWarnings`); as a stage, what its stage receives, which the pipeline
 * that has the stage checks.
 */
export function checkStageContracts(
  pipeline: string,
  draft: PipelineDraft,
  loaded: Record<string, LoadedStage>,
  toolNames: readonly string[],
  report: Report,
): Diagnostic[] {
  const found: Diagnostic[] = [];
  const declared = declaredFields(draft.context);
  const itemFields = mapItemFields(draft);
  const arrivals = upstreamArrivals(draft);
  for (const [id, { stage, locateField }] of Object.entries(loaded)) {
    if (stage.kind !== "llm") continue;
    const definition = stage.definition;
    const inStage = (path: DataPath, code: Diagnostic["code"], message: string) => {
      if (locateField) found.push(diagnostic(definition.file, locateField(path), code, message));
      else report(["stages", id], code, `stages.${id}: ${message}`);
    };
    if (definition.id !== id) {
      report(
        ["stages", id],
        DIAGNOSTIC_CODES.stageIdMismatch,
        `stages.${id}: the key must equal the id of its stage (${definition.file} has id "${definition.id}")`,
      );
    }
    if (toolNames.includes(definition.completionTool)) {
      inStage(
        ["completionTool"],
        DIAGNOSTIC_CODES.completionToolCollision,
        `completionTool "${definition.completionTool}" is also a tool of the host running pipeline ${pipeline}; the completion channel must not shadow a tool`,
      );
    }
    definition.allowedTools.forEach((tool, i) => {
      if (toolNames.includes(tool)) return;
      inStage(
        ["allowedTools", i],
        DIAGNOSTIC_CODES.unknownTool,
        `allowedTools names "${tool}", which the host running pipeline ${pipeline} does not have (its tools: ${toolNames.join(", ") || "none"})`,
      );
    });
    checkOutputFields(id, stage, report);
    const fields = itemFields.get(id);
    found.push(
      ...unresolvedCtx(pipeline, definition, fields ? new Set([...declared, ...fields]) : declared),
    );
  }
  for (const [id, { stage }] of Object.entries(loaded)) {
    const ways = arrivals.get(id) ?? [];
    for (const reader of readersOf(stage)) {
      const entered = reader.via
        ? ways.map((way) => ({ ...way, how: `${reader.via}, entered ${way.how}` }))
        : ways;
      found.push(...unavailableUpstream(reader.id, reader.definition, entered));
    }
  }
  return found;
}

/**
 * The LLM stages that receive the upstream `stage` is entered with: itself, or a sub-pipeline's
 * entry (and so on down), `via` that pipeline stage.
 */
function readersOf(
  stage: PipelineStage,
  via?: string,
): { id: string; definition: StageDefinition; via?: string }[] {
  if (stage.kind === "llm")
    return [{ id: stage.id, definition: stage.definition, ...(via !== undefined && { via }) }];
  if (stage.kind !== "pipeline") return [];
  const entry = stage.pipeline.stages[stage.pipeline.entry];
  const as = via ?? `as the entry of pipeline ${stage.pipeline.id} (stage ${stage.id})`;
  return entry ? readersOf(entry, as) : [];
}

/** The fields an LLM stage hands on must be declared by its completion schema. */
function checkOutputFields(
  id: string,
  stage: Extract<PipelineStage, { kind: "llm" }>,
  report: Report,
): void {
  const { completionSchema, completionTool } = stage.definition;
  const declared = declaredFields(completionSchema);
  const listed = declared.size > 0 ? `it declares ${[...declared].join(", ")}` : "it declares none";
  stage.outputFields?.forEach((field, i) => {
    if (declared.has(field)) return;
    report(
      ["stages", id, "output", i],
      DIAGNOSTIC_CODES.outputFieldUnknown,
      `stages.${id}.output[${i}]: "${field}" is not a field of ${completionTool}'s completionSchema (${listed})`,
    );
  });
}

/** The ctx fields a map group adds for its stage: `item`, `itemIndex` and its `as` name. */
export function mapItemFields(draft: Pick<PipelineDraft, "next">): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const transition of Object.values(draft.next)) {
    if (transition.kind !== "map") continue;
    const names = ["item", "itemIndex", ...(transition.as !== undefined ? [transition.as] : [])];
    fields.set(transition.stage, [...(fields.get(transition.stage) ?? []), ...names]);
  }
  return fields;
}

function declaredFields(context: JsonSchema | undefined): Set<string> {
  const properties = context?.properties;
  return new Set(isRecord(properties) ? Object.keys(properties) : []);
}

function unresolvedCtx(
  pipeline: string,
  definition: StageDefinition,
  declared: Set<string>,
): Diagnostic[] {
  const known = declared.size > 0 ? `it declares ${[...declared].join(", ")}` : "it declares none";
  return definition.template.ctxReferences
    .filter((ref) => !declared.has(ref.field))
    .map((ref) =>
      diagnostic(
        definition.file,
        ref,
        DIAGNOSTIC_CODES.ctxUnresolved,
        `{{${ref.expression}}} reads ctx.${ref.field}, which the context schema of pipeline ${pipeline} does not declare (${known})`,
      ),
    );
}

/** How many upstream results a stage is sure to be entered with, along each declared way in. */
interface Arrival {
  count: number;
  how: string;
  /** The count is a minimum (a join under `any` or `quorum`), not the exact number. */
  atLeast?: boolean;
  /**
   * The way in of a pipeline's entry when the pipeline runs by itself: a pipeline whose entry
   * reads upstream may be meant as another's stage, so reading past it is only a warning.
   */
  byItself?: boolean;
}

/**
 * `{{ctx.upstream[i]…}}` in the stages that receive what a pipeline's entry is entered with,
 * for the pipeline run by itself, where the entry receives nothing: only a warning, since a
 * pipeline whose entry reads upstream may be meant as another's stage.
 */
export function entryUpstreamWarnings(pipeline: PipelineDefinition): Diagnostic[] {
  const entry = pipeline.stages[pipeline.entry];
  if (!entry) return [];
  const byItself = { count: 0, how: `as the entry of pipeline ${pipeline.id}`, byItself: true };
  return readersOf(entry).flatMap((reader) =>
    unavailableUpstream(reader.id, reader.definition, [
      reader.via ? { ...byItself, how: `${reader.via}, entered ${byItself.how}` } : byItself,
    ]),
  );
}

function upstreamArrivals(draft: PipelineDraft): Map<string, Arrival[]> {
  const arrivals = new Map<string, Arrival[]>();
  const add = (id: string, arrival: Arrival) => {
    const known = arrivals.get(id);
    if (known) known.push(arrival);
    else arrivals.set(id, [arrival]);
  };
  for (const [from, transition] of Object.entries(draft.next)) {
    if (transition.kind === "rules") {
      for (const rule of transition.rules) add(rule.to, { count: 1, how: `after ${from}` });
      continue;
    }
    if (transition.kind === "map") {
      add(transition.stage, { count: 0, how: `as the stage of the map group after ${from}` });
      add(transition.join, {
        count: 0,
        how: `as the join of the map group after ${from}, whose list may be empty`,
        atLeast: true,
      });
      continue;
    }
    for (const sibling of transition.siblings) {
      add(sibling, { count: 0, how: `as a parallel sibling after ${from}` });
    }
    add(transition.join, joinArrival(transition));
  }
  return arrivals;
}

/**
 * A join gets the results of the siblings settled when its policy is met: every sibling under
 * `fail-fast` and `all-settled`, but only sure of the first `ok` under `any` and of k under `quorum`.
 */
function joinArrival({ siblings, policy }: Extract<Transition, { kind: "parallel" }>): Arrival {
  const how = `as the join of ${siblings.join(", ")}`;
  switch (policy.kind) {
    case "any":
      return { count: 1, how: `${how} under policy any`, atLeast: true };
    case "quorum":
      return {
        count: Math.max(0, Math.min(policy.k, siblings.length)),
        how: `${how} under policy { quorum: ${policy.k} }`,
        atLeast: true,
      };
    default:
      return { count: siblings.length, how };
  }
}

/** `{{ctx.upstream[i]…}}` in a stage entered with i or fewer results can never render. */
function unavailableUpstream(
  id: string,
  definition: StageDefinition,
  arrivals: Arrival[],
): Diagnostic[] {
  return definition.template.parts.flatMap((part) => {
    if (part.kind !== "placeholder" || part.path[0] !== "ctx" || part.path[1] !== "upstream") {
      return [];
    }
    const index = part.path[2];
    if (typeof index !== "number") return [];
    const short =
      arrivals.find((arrival) => arrival.count <= index && !arrival.byItself) ??
      arrivals.find((arrival) => arrival.count <= index);
    if (!short) return [];
    const results = short.count === 1 ? "1 upstream result" : `${short.count} upstream results`;
    const receives = short.atLeast
      ? `it is then sure of ${results} only`
      : `it then receives ${results}`;
    return [
      diagnostic(
        definition.file,
        part,
        DIAGNOSTIC_CODES.ctxUnresolved,
        `{{${part.raw}}} has no value when ${id} runs ${short.how}: ${receives}`,
        short.byItself ? "warning" : "error",
      ),
    ];
  });
}
