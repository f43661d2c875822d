import type * as z from "../zod.js";
import {
  byPosition,
  DIAGNOSTIC_CODES,
  type Diagnostic,
  type DiagnosticCode,
  diagnostic,
  isError,
  type LoadResult,
} from "./diagnostics.js";
import { type Frontmatter, splitFrontmatter } from "./frontmatter.js";
import { checkJsonSchema, type JsonSchema } from "./json-schema.js";
import {
  type BACKOFF_KINDS,
  DEFAULT_BACKOFF_DELAY_MS,
  KNOWN_STAGE_FIELDS,
  type RESOLUTION_POLICIES,
  type StageFrontmatter,
  stageFrontmatterSchema,
} from "./stage-schema.js";
import { parseTemplate, type Template, type TemplateScope } from "./template.js";
import { unknownFieldAdvice } from "./unknown-fields.js";

export type BackoffKind = (typeof BACKOFF_KINDS)[number];
export type ResolutionPolicy = (typeof RESOLUTION_POLICIES)[number];

export interface RetryPolicy {
  maxAttempts: number;
  backoff: BackoffKind;
  /** First wait, and every wait for `fixed`. */
  delayMs: number;
  /** Ceiling for `exponential`. */
  maxDelayMs?: number;
}

/** A loaded, validated stage file: plain data, serialisable, no compiled state. */
export interface StageDefinition {
  id: string;
  name: string;
  description?: string;
  allowedTools: string[];
  completionTool: string;
  completionSchema: JsonSchema;
  inputsSchema?: JsonSchema;
  retryPolicy: RetryPolicy;
  turnCap: number;
  resolutionPolicy: ResolutionPolicy;
  tags: string[];
  /** Frontmatter keys the contract does not know: kept for authors' tooling, ignored by the runtime. */
  extensions: Record<string, unknown>;
  /** The body as written: the system-prompt template. */
  body: string;
  template: Template;
  file: string;
}

/** Loads a stage from its text. Never throws: the definition, or every problem found. */
export function parseStageDefinition(text: string, file: string): LoadResult<StageDefinition> {
  const split = splitFrontmatter(text, file);
  return split.ok ? stageFromFrontmatter(split.value, file) : split;
}

/** A stage from its split-off frontmatter and body (see `splitFrontmatter`). */
export function stageFromFrontmatter(
  frontmatter: Frontmatter,
  file: string,
): LoadResult<StageDefinition> {
  const diagnostics: Diagnostic[] = [];
  const report = (path: readonly (string | number)[], code: DiagnosticCode, message: string) =>
    diagnostics.push(diagnostic(file, frontmatter.locate(path), code, message));

  const data = frontmatter.data ?? {};
  let fields: StageFrontmatter | undefined;
  if (typeof data !== "object" || Array.isArray(data)) {
    const shape = Array.isArray(data) ? "a list" : "a single value";
    report(
      [],
      DIAGNOSTIC_CODES.definitionInvalid,
      `the frontmatter is ${shape}; it must map field names to values`,
    );
  } else {
    fields = checkShape(data as Record<string, unknown>, report);
    warnOfUnknownFields(data as Record<string, unknown>, frontmatter, file, diagnostics);
  }

  const { template, problems } = parseTemplate(frontmatter.body, frontmatter.bodyLine);
  for (const p of problems) diagnostics.push(diagnostic(file, p, p.code, p.message));
  if (fields && fields.description === undefined) {
    for (const part of template.parts)
      if (part.kind === "placeholder" && part.path[0] === "stage" && part.path[1] === "description")
        diagnostics.push(
          diagnostic(
            file,
            part,
            DIAGNOSTIC_CODES.templateForbidden,
            `{{${part.raw}}}: the stage has no description to fill it with; add one to the frontmatter`,
          ),
        );
  }
  if (frontmatter.body.trim() === "") {
    diagnostics.push(
      diagnostic(
        file,
        { line: frontmatter.bodyLine, column: 1 },
        DIAGNOSTIC_CODES.bodyEmpty,
        "the body is empty, so the model gets no instructions",
        "warning",
      ),
    );
  }

  diagnostics.sort(byPosition);
  // Without an error the fields parsed: `fields` is undefined only beside an error.
  if (diagnostics.some(isError) || fields === undefined) return { ok: false, diagnostics };
  return {
    ok: true,
    value: toDefinition(fields, frontmatter, template, file),
    warnings: diagnostics,
  };
}

/** What `{{stage.<field>}}` placeholders read: the stage's scalar frontmatter fields. */
export function templateStageOf(stage: StageDefinition): TemplateScope["stage"] {
  return {
    id: stage.id,
    name: stage.name,
    ...(stage.description !== undefined && { description: stage.description }),
    completionTool: stage.completionTool,
    turnCap: stage.turnCap,
    resolutionPolicy: stage.resolutionPolicy,
  };
}

type Report = (path: readonly (string | number)[], code: DiagnosticCode, message: string) => void;

/**
 * Unknown keys are the author's own metadata and stay silent, unless one looks like a field
 * misspelt or a setting stagechart does not have under that name: a warning says what to use.
 */
function warnOfUnknownFields(
  data: Record<string, unknown>,
  frontmatter: Frontmatter,
  file: string,
  diagnostics: Diagnostic[],
): void {
  for (const key of Object.keys(data)) {
    if (KNOWN_STAGE_FIELDS.has(key)) continue;
    const advice = unknownFieldAdvice(key, KNOWN_STAGE_FIELDS);
    if (advice === undefined) continue;
    const at = frontmatter.locate([key]);
    diagnostics.push(diagnostic(file, at, DIAGNOSTIC_CODES.fieldUnknown, advice, "warning"));
  }
}

/** Reports every problem of the frontmatter's fields; returns them parsed when they parse. */
function checkShape(data: Record<string, unknown>, report: Report): StageFrontmatter | undefined {
  const parsed = stageFrontmatterSchema.safeParse(data);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
      report(path, codeFor(issue, path, data), messageFor(issue, path, data));
    }
  }
  checkSchema(data, "completionSchema", DIAGNOSTIC_CODES.completionSchemaInvalid, report);
  checkSchema(data, "inputsSchema", DIAGNOSTIC_CODES.inputsSchemaInvalid, report);

  const tools = Array.isArray(data.allowedTools) ? data.allowedTools : [];
  if (typeof data.completionTool === "string" && tools.includes(data.completionTool)) {
    report(
      ["completionTool"],
      DIAGNOSTIC_CODES.completionToolCollision,
      `completionTool "${data.completionTool}" is also in allowedTools; the completion channel must not share a tool's name`,
    );
  }
  const listed = new Set<unknown>();
  tools.forEach((tool, index) => {
    if (listed.has(tool)) {
      report(
        ["allowedTools", index],
        DIAGNOSTIC_CODES.definitionInvalid,
        `allowedTools lists "${String(tool)}" twice`,
      );
    }
    listed.add(tool);
  });
  return parsed.success ? parsed.data : undefined;
}

function checkSchema(
  data: Record<string, unknown>,
  field: "completionSchema" | "inputsSchema",
  code: DiagnosticCode,
  report: Report,
): void {
  const schema = data[field];
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return;
  if (field === "completionSchema" && (schema as JsonSchema).type !== "object") {
    report(
      [field],
      code,
      "completionSchema must have `type: object` at its root: it is the completion tool's input schema",
    );
    return;
  }
  const compiled = checkJsonSchema(schema as JsonSchema);
  if (compiled.ok) return;
  for (const problem of compiled.error) {
    const where = [field, ...problem.path].join(".");
    report([field, ...problem.path], code, `${where} is not valid JSON Schema: ${problem.message}`);
  }
}

function isMissing(data: Record<string, unknown>, path: readonly (string | number)[]): boolean {
  let value: unknown = data;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return false;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return path.length > 0 && value === undefined;
}

function codeFor(
  issue: z.core.$ZodIssue,
  path: readonly (string | number)[],
  data: Record<string, unknown>,
): DiagnosticCode {
  if (isMissing(data, path)) return DIAGNOSTIC_CODES.missingField;
  if (path[0] === "id" && issue.code === "invalid_format") return DIAGNOSTIC_CODES.idInvalid;
  if (path[0] === "turnCap" && issue.code === "too_small") return DIAGNOSTIC_CODES.turnCapTooLow;
  return DIAGNOSTIC_CODES.definitionInvalid;
}

function messageFor(
  issue: z.core.$ZodIssue,
  path: readonly (string | number)[],
  data: Record<string, unknown>,
): string {
  if (isMissing(data, path)) return `missing required field "${path.join(".")}"`;
  if (issue.code === "unrecognized_keys") {
    return `${path.join(".")}: unknown ${issue.keys.length === 1 ? "key" : "keys"} ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
  }
  return issue.message;
}

function toDefinition(
  fm: StageFrontmatter,
  frontmatter: Frontmatter,
  template: Template,
  file: string,
): StageDefinition {
  const extensions = Object.fromEntries(
    Object.entries(fm).filter(([key]) => !KNOWN_STAGE_FIELDS.has(key)),
  );
  const { maxAttempts, backoff, delayMs, maxDelayMs } = fm.retryPolicy;
  return {
    id: fm.id,
    name: fm.name,
    ...(fm.description !== undefined && { description: fm.description }),
    allowedTools: fm.allowedTools,
    completionTool: fm.completionTool,
    completionSchema: fm.completionSchema,
    ...(fm.inputsSchema !== undefined && { inputsSchema: fm.inputsSchema }),
    retryPolicy: {
      maxAttempts,
      backoff,
      delayMs: delayMs ?? DEFAULT_BACKOFF_DELAY_MS,
      ...(maxDelayMs !== undefined && { maxDelayMs }),
    },
    turnCap: fm.turnCap,
    resolutionPolicy: fm.resolutionPolicy,
    tags: fm.tags ?? [],
    extensions,
    body: frontmatter.body,
    template,
    file,
  };
}
