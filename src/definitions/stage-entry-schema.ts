import * as z from "../zod.js";
import { type AskEntry, askEntrySchema } from "./ask-entry.js";
import { type CodeStageFunction, isRecord } from "./contract.js";
import type { JsonSchema } from "./json-schema.js";
import { jsonSchemaObject, type PipelineForm } from "./pipeline-schema.js";
import type { PipelineSpec } from "./pipeline-spec.js";
import { byKind, fn, mapping, present, text } from "./schema-parts.js";
import type { StageDefinition } from "./stage.js";
import { stageFrontmatterSchema } from "./stage-schema.js";

/**
 * A pipeline's stage entries: a stage file, a sub-pipeline (file or spec), an inline stage, code,
 * a command or an ask, each parsed by the shape its key names.
 */

const DEFAULT_COMMAND_TIMEOUT_MS = 600_000;

/** A stage entry, parsed; `key` is the field it was written under, where problems point. */
export type StageEntry =
  | {
      kind: "file";
      key: "file";
      file: string;
      outputFields?: string[];
      /** In place of the stage file's `completionSchema` (TypeScript's `completion`). */
      completionSchema?: JsonSchema;
    }
  | { kind: "pipeline-file"; key: "pipeline"; file: string }
  | { kind: "pipeline-spec"; key: "pipeline"; spec: PipelineSpec }
  | {
      kind: "stage";
      key: "stage";
      definition: StageDefinition;
      outputFields?: string[];
      completionSchema?: JsonSchema;
    }
  | { kind: "code"; key: "code"; run: CodeStageFunction }
  | { kind: "command"; key: "run"; command: string; timeoutMs: number }
  | ({ kind: "ask"; key: "ask" } & AskEntry);

const ENTRY_KINDS = {
  yaml: ["file", "pipeline", "code", "run", "ask"],
  ts: ["file", "stage", "pipeline", "code", "run", "ask"],
};

const stageFile = z.optional(text("a path to a stage file"));
const pipelineFile = text("a path to a pipeline file");
const command = {
  run: z.optional(text("a command")),
  timeoutMs: z.optional(
    z
      .int({ error: "must be a whole number of milliseconds" })
      .check(z.gte(1, { error: "must be at least 1" })),
  ),
};

/** The completion fields an LLM stage hands on as its output (Exit's declarative form). */
const output = z.optional(
  z
    .array(text("a field of the completion payload"), {
      error: "must be a list of fields of the completion payload",
    })
    .check(z.minLength(1, { error: "must name at least one field of the completion payload" })),
);

const position = { line: z.int(), column: z.int() };
const templatePart = z.discriminatedUnion("kind", [
  z.looseObject({ kind: z.literal("text"), text: z.string() }),
  z.looseObject({
    kind: z.literal("placeholder"),
    raw: z.string(),
    path: z.array(z.union([z.string(), z.int()])),
    ...position,
  }),
]);

/** Everything the loader and the runtime read from a StageDefinition; a hand-made one lacking any of it is refused. */
const loadedStage = z.extend(stageFrontmatterSchema, {
  tags: z.array(z.string()),
  extensions: z.record(z.string(), z.unknown()),
  body: z.string(),
  file: z.string(),
  template: z.looseObject({
    parts: z.array(templatePart),
    ctxReferences: z.array(
      z.looseObject({ field: z.string(), expression: z.string(), ...position }),
    ),
  }),
});

const rawEntry = {
  yaml: mapping("a stage entry", {
    file: stageFile,
    output,
    pipeline: z.optional(pipelineFile),
    code: z.optional(fn<CodeStageFunction>("a code reference")),
    ...command,
    ask: z.optional(askEntrySchema),
  }),
  ts: mapping("a stage entry", {
    file: stageFile,
    output,
    // A zod schema given in TypeScript is JSON Schema by now (zod-schemas.ts).
    completion: z.optional(jsonSchemaObject),
    stage: z.optional(
      z.custom<StageDefinition>((value) => loadedStage.safeParse(value).success, {
        error: "must be a loaded StageDefinition (from loadStageFile or parseStageDefinition)",
      }),
    ),
    pipeline: z.optional(
      byKind<string | PipelineSpec>(
        { string: pipelineFile, object: z.custom<PipelineSpec>(isRecord) },
        "a pipeline spec or a path to a pipeline file",
      ),
    ),
    code: z.optional(fn<CodeStageFunction>("a code stage function")),
    ...command,
    ask: z.optional(askEntrySchema),
  }),
};

type RawEntry = z.output<(typeof rawEntry)["ts"]>;

const entrySchemas: Partial<Record<PipelineForm, z.ZodMiniType<StageEntry>>> = {};

/**
 * The schema of one entry under `stages`: YAML takes files, sub-pipeline files, code references,
 * commands and asks. Built once per form, when first asked for: zod compiles a parser for each
 * schema object when it first parses, so one built per pipeline was compiled for every pipeline.
 */
export function stageEntrySchema(form: PipelineForm): z.ZodMiniType<StageEntry> {
  entrySchemas[form] ??= buildStageEntrySchema(form);
  return entrySchemas[form];
}

function buildStageEntrySchema(form: PipelineForm): z.ZodMiniType<StageEntry> {
  const kinds = ENTRY_KINDS[form];
  const listed = `${kinds.slice(0, -1).join(", ")} or ${kinds.at(-1)}`;
  const checked = (rawEntry[form] as z.ZodMiniType<RawEntry>).check(
    z.superRefine((raw, ctx) => {
      const [kind, ...extra] = kinds.filter((key) => present(raw, key));
      if (kind === undefined) {
        ctx.addIssue({ code: "custom", message: `a stage entry needs one of ${listed}` });
      }
      for (const key of extra) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `a stage entry has one of ${listed}; this one also has ${kind}`,
        });
      }
      if (raw.completion !== undefined && raw.file === undefined && raw.stage === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["completion"],
          message: "only an LLM stage entry (file or stage) takes completion",
        });
      }
      if (raw.output !== undefined && raw.file === undefined && raw.stage === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["output"],
          message: "only an LLM stage entry (file or stage) takes output",
        });
      }
      if (raw.timeoutMs !== undefined && raw.run === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["timeoutMs"],
          message: "only a run entry takes timeoutMs",
        });
      }
    }),
  );
  return z.pipe(checked, z.transform(toEntry));
}

function toEntry(raw: RawEntry): StageEntry {
  const outputFields = {
    ...(raw.output !== undefined && { outputFields: raw.output }),
    ...(raw.completion !== undefined && { completionSchema: raw.completion }),
  };
  if (raw.file !== undefined) return { kind: "file", key: "file", file: raw.file, ...outputFields };
  if (raw.stage !== undefined) {
    return { kind: "stage", key: "stage", definition: raw.stage, ...outputFields };
  }
  if (raw.code !== undefined) return { kind: "code", key: "code", run: raw.code };
  if (typeof raw.pipeline === "string") {
    return { kind: "pipeline-file", key: "pipeline", file: raw.pipeline };
  }
  if (raw.pipeline !== undefined) {
    return { kind: "pipeline-spec", key: "pipeline", spec: raw.pipeline };
  }
  if (raw.ask !== undefined) return { kind: "ask", key: "ask", ...(raw.ask as AskEntry) };
  return {
    kind: "command",
    key: "run",
    command: raw.run ?? "",
    timeoutMs: raw.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
  };
}
