import { hash } from "node:crypto";
import type { PipelineDefinition, PipelineStage } from "../definitions/pipeline-types.js";
import { byEnUsCollation } from "../en-us-order.js";

/**
 * What a run was compiled from, piece by piece: one hash per stage and one for the rest (ctx
 * schema, entry, transitions, grants). A snapshot is stamped with it; resuming into another
 * definition lists the pieces that changed.
 */
export interface DefinitionFingerprint {
  hash: string;
  parts: Record<string, string>;
}

/**
 * The pipeline's fingerprint, computed once per loaded definition: a run, its compiled-machine
 * cache and its sub-pipelines all ask for it, and a definition is not changed once loaded.
 */
export function fingerprint(pipeline: PipelineDefinition): DefinitionFingerprint {
  let known = fingerprints.get(pipeline);
  if (!known) {
    known = fingerprintOf(pipeline);
    fingerprints.set(pipeline, known);
  }
  return known;
}

const fingerprints = new WeakMap<PipelineDefinition, DefinitionFingerprint>();

function fingerprintOf(pipeline: PipelineDefinition): DefinitionFingerprint {
  const parts: Record<string, string> = {
    "pipeline (context, entry, transitions, grants)": digest({
      context: pipeline.context,
      entry: pipeline.entry,
      next: pipeline.next,
      grants: pipeline.grants,
      ...(pipeline.budget !== undefined && { budget: pipeline.budget }),
      guards: Object.fromEntries(
        Object.entries(pipeline.guards).map(([name, fn]) => [name, String(fn)]),
      ),
      hooks: Object.fromEntries(
        Object.entries(pipeline.hooks).map(([id, hooks]) => [
          id,
          [
            String(hooks.gate),
            String(hooks.assert),
            String(hooks.exit),
            ...(hooks.refuseCompletion ? [String(hooks.refuseCompletion)] : []),
          ],
        ]),
      ),
    }),
  };
  // A YAML pipeline's code is its modules' text: a changed helper is a changed definition.
  if (pipeline.codeModules) parts["code modules"] = digest(pipeline.codeModules);
  for (const stage of Object.values(pipeline.stages)) {
    // An LLM stage piece by piece, so drift can say which of its fields changed.
    const shape = stageShape(stage);
    if (stage.kind !== "llm") parts[`stage ${stage.id}`] = digest(shape);
    else
      for (const [field, value] of Object.entries(shape as Record<string, unknown>))
        parts[`stage ${stage.id}.${field}`] = digest(value);
  }
  return { hash: digest(parts), parts };
}

/**
 * What changed between two fingerprints, in words: `stage plan changed (turnCap, body)`,
 * `stage lint added`, `pipeline (context, entry, transitions, grants) changed`.
 */
export function describeDrift(
  before: Record<string, string>,
  after: Record<string, string>,
): string[] {
  // Keys are `<piece>` or, for an LLM stage's fields, `<piece>.<field>`.
  const pieces = new Map<string, string[]>();
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const piece = name.split(/\.(?=[^.]+$)/)[0] as string;
    pieces.set(piece, [...(pieces.get(piece) ?? []), name]);
  }
  return [...pieces]
    .sort(([a], [b]) => byEnUsCollation(a, b))
    .flatMap(([piece, names]) => {
      if (!names.some((name) => name in after)) return [`${piece} removed`];
      if (!names.some((name) => name in before)) return [`${piece} added`];
      const changed = names.filter((name) => before[name] !== after[name]);
      if (changed.length === 0) return [];
      const fields = changed.flatMap((name) => name.split(/\.(?=[^.]+$)/).slice(1)).sort();
      return [`${piece} changed${fields.length > 0 ? ` (${fields.join(", ")})` : ""}`];
    });
}

function stageShape(stage: PipelineStage): unknown {
  switch (stage.kind) {
    case "llm": {
      const { file: _file, template: _template, ...definition } = stage.definition;
      return {
        ...definition,
        ...(stage.outputFields !== undefined && { output: stage.outputFields }),
      };
    }
    case "pipeline":
      return { kind: stage.kind, pipeline: fingerprint(stage.pipeline).hash };
    case "command":
      return { kind: stage.kind, command: stage.command, timeoutMs: stage.timeoutMs };
    case "code":
      return { kind: stage.kind, run: String(stage.run) };
    case "ask":
      return {
        kind: stage.kind,
        prompt: stage.prompt,
        schema: stage.schema,
        ...(stage.timeout !== undefined && { timeout: stage.timeout }),
      };
  }
}

function digest(value: unknown): string {
  return hash("sha256", stableJson(value), "hex").slice(0, 16);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => byEnUsCollation(a, b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
