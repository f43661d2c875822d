import { err, ok, type Result, StagechartError } from "../errors.js";
import { DIAGNOSTIC_CODES, type DiagnosticCode, type Position } from "./diagnostics.js";

/**
 * The narrow template language of stage bodies: `{{ctx.<path>}}`, `{{ctx.upstream[i].<path>}}`,
 * `{{ctx.workflowRunId}}`, `{{ctx.stageExecutionId}}`, `{{ctx.stagesBefore}}`,
 * `{{ctx.override.reason}}`, `{{ctx.override.from}}`, and the stage's own scalar frontmatter
 * fields, `{{stage.id}}`, `{{stage.name}}`, `{{stage.turnCap}}`… (`STAGE_TEMPLATE_FIELDS`). No
 * conditionals, loops or expressions. `\{{` is a literal `{{`.
 * Parsed once at load time; rendered at a stage's Init.
 */

export type PathSegment = string | number;

export interface Placeholder extends Position {
  kind: "placeholder";
  /** The text between the braces, trimmed. */
  raw: string;
  /** Namespace first: `["ctx", "files", 0, "name"]`. */
  path: PathSegment[];
}

export type TemplatePart = { kind: "text"; text: string } | Placeholder;

/** A ctx field the body reads that the pipeline must provide (core-provided names excluded). */
export interface CtxReference extends Position {
  /** The field under ctx, e.g. `task` for `{{ctx.task.title}}`. */
  field: string;
  /** The full path as written, e.g. `ctx.task.title`. */
  expression: string;
}

export interface Template {
  parts: TemplatePart[];
  ctxReferences: CtxReference[];
}

export interface TemplateProblem extends Position {
  code: DiagnosticCode;
  message: string;
}

/**
 * The stage's own frontmatter fields a body may read as `{{stage.<field>}}`: the scalar ones.
 * Lists and schemas are left out: a prompt that needs them says them in its own words.
 */
export const STAGE_TEMPLATE_FIELDS = [
  "id",
  "name",
  "description",
  "completionTool",
  "turnCap",
  "resolutionPolicy",
] as const;

export type StageTemplateField = (typeof STAGE_TEMPLATE_FIELDS)[number];

export interface TemplateScope {
  ctx: Readonly<Record<string, unknown>>;
  /** The stage's scalar fields; `description` only when the stage has one. */
  stage: { id: string; name: string } & Partial<Record<StageTemplateField, string | number>>;
}

/** ctx fields the engine gives every stage; a run's own ctx cannot set them. */
export const CORE_CTX_FIELDS: ReadonlySet<string> = new Set([
  "upstream",
  "workflowRunId",
  "stageExecutionId",
  "stagesBefore",
  "override",
]);
/** What `ctx.override` holds: why an override entered the stage, and the stage it came from. */
const OVERRIDE_FIELDS = new Set(["reason", "from"]);
const STAGE_FIELDS: ReadonlySet<string> = new Set(STAGE_TEMPLATE_FIELDS);
const STAGE_FIELD_LIST = STAGE_TEMPLATE_FIELDS.map((field) => `{{stage.${field}}}`).join(", ");
const PATH = /^[A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*|\[\d+\])*$/;
const SEGMENT = /\.?([A-Za-z_$][\w$-]*)|\[(\d+)\]/g;

/** Parses a body; `firstLine` is the file line the body starts on, so positions are file positions. */
export function parseTemplate(
  source: string,
  firstLine = 1,
): { template: Template; problems: TemplateProblem[] } {
  const parts: TemplatePart[] = [];
  const problems: TemplateProblem[] = [];
  const locate = lineLocator(source, firstLine);
  let text = "";
  let index = 0;

  while (index < source.length) {
    const open = source.indexOf("{{", index);
    if (open === -1) {
      text += source.slice(index);
      break;
    }
    if (open > 0 && source[open - 1] === "\\") {
      text += `${source.slice(index, open - 1)}{{`;
      index = open + 2;
      continue;
    }
    text += source.slice(index, open);
    const at = locate(open);
    const close = source.indexOf("}}", open + 2);
    const nextOpen = source.indexOf("{{", open + 2);
    if (close === -1 || (nextOpen !== -1 && nextOpen < close)) {
      problems.push({
        ...at,
        code: DIAGNOSTIC_CODES.templateSyntax,
        message: "`{{` is never closed with `}}` (write `\\{{` for a literal `{{`)",
      });
      text += "{{";
      index = open + 2;
      continue;
    }
    const raw = source.slice(open + 2, close).trim();
    const problem = checkPlaceholder(raw);
    if (problem) {
      problems.push({ ...at, code: DIAGNOSTIC_CODES.templateForbidden, message: problem });
    } else {
      if (text) parts.push({ kind: "text", text });
      text = "";
      parts.push({ kind: "placeholder", raw, path: splitPath(raw), ...at });
    }
    index = close + 2;
  }
  if (text) parts.push({ kind: "text", text });
  return { template: { parts, ctxReferences: ctxReferencesOf(parts) }, problems };
}

function checkPlaceholder(raw: string): string | undefined {
  const shown = `{{${raw}}}`;
  if (!PATH.test(raw)) {
    return `${shown} is not a placeholder: templates allow only {{ctx.<path>}} and {{stage.<field>}}, no conditionals, loops or expressions`;
  }
  const [namespace, first, ...rest] = splitPath(raw);
  if (namespace === "env") {
    return `${shown}: environment variables never reach a prompt; pass values through the pipeline's ctx`;
  }
  if (namespace === "stage") {
    if (typeof first === "string" && STAGE_FIELDS.has(first) && rest.length === 0) return undefined;
    return `${shown}: a template reads only the stage's scalar fields: ${STAGE_FIELD_LIST}`;
  }
  if (namespace !== "ctx") {
    return `${shown}: unknown namespace "${String(namespace)}"; placeholders start with ctx. or stage.`;
  }
  if (first === undefined) return `${shown}: name a field under ctx, e.g. {{ctx.task}}`;
  if (first === "attempts") {
    return `${shown}: ctx.attempts is not template-addressable; the body is rendered once, and retry reasons reach the model as messages`;
  }
  if (first === "host") return `${shown}: ctx.host is a runtime surface, not template-addressable`;
  if ((first === "workflowRunId" || first === "stageExecutionId") && rest.length > 0) {
    return `${shown}: ctx.${first} is a string with no fields`;
  }
  if (first === "stagesBefore" && rest.length > 0) {
    return `${shown}: ctx.stagesBefore is a number with no fields`;
  }
  if (first === "override" && (rest.length !== 1 || !OVERRIDE_FIELDS.has(String(rest[0])))) {
    return `${shown}: only {{ctx.override.reason}} and {{ctx.override.from}} are available (empty unless an override entered the stage)`;
  }
  if (first === "upstream" && rest.length > 0 && typeof rest[0] !== "number") {
    return `${shown}: ctx.upstream is a list; index it, e.g. {{ctx.upstream[0].output}}`;
  }
  return undefined;
}

function splitPath(raw: string): PathSegment[] {
  return Array.from(raw.matchAll(SEGMENT), (m) => (m[1] !== undefined ? m[1] : Number(m[2])));
}

function ctxReferencesOf(parts: TemplatePart[]): CtxReference[] {
  return parts.flatMap((part) => {
    if (part.kind !== "placeholder" || part.path[0] !== "ctx") return [];
    const field = part.path[1];
    if (typeof field !== "string" || CORE_CTX_FIELDS.has(field)) return [];
    return [{ field, expression: part.raw, line: part.line, column: part.column }];
  });
}

function lineLocator(source: string, firstLine: number): (offset: number) => Position {
  const starts = [0];
  for (let i = source.indexOf("\n"); i !== -1; i = source.indexOf("\n", i + 1)) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + firstLine, column: offset - (starts[low] ?? 0) + 1 };
  };
}

/** Renders a parsed template. A placeholder without a value is an error, never "undefined". */
export function renderTemplate(template: Template, scope: TemplateScope): Result<string> {
  let out = "";
  for (const part of template.parts) {
    if (part.kind === "text") {
      out += part.text;
      continue;
    }
    const value = resolve(part, scope);
    if (!value.ok) return value;
    out += value.value;
  }
  return ok(out);
}

function resolve(placeholder: Placeholder, scope: TemplateScope): Result<string> {
  let value: unknown = scope;
  let walked = "";
  for (const segment of placeholder.path) {
    const next = step(value, segment);
    const label = typeof segment === "number" ? `[${segment}]` : walked ? `.${segment}` : segment;
    if (next === undefined) {
      const why = walked
        ? `${walked} has no ${typeof segment === "number" ? `element ${label}` : `field "${segment}"`}`
        : `no ${segment} in scope`;
      return unresolved(placeholder, why);
    }
    walked += label;
    value = next;
  }
  return formatValue(value, placeholder);
}

function step(value: unknown, segment: PathSegment): unknown {
  if (typeof segment === "number") return Array.isArray(value) ? value[segment] : undefined;
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, segment) ? (value as Record<string, unknown>)[segment] : undefined;
}

function formatValue(value: unknown, placeholder: Placeholder): Result<string> {
  switch (typeof value) {
    case "string":
      return ok(value);
    case "number":
    case "boolean":
    case "bigint":
      return ok(String(value));
    case "object":
      return ok(JSON.stringify(value, null, 2));
    default:
      return unresolved(placeholder, `its value is a ${typeof value}, which has no text form`);
  }
}

function unresolved(placeholder: Placeholder, why: string): Result<string> {
  return err(
    new StagechartError(
      DIAGNOSTIC_CODES.ctxUnresolved,
      `{{${placeholder.raw}}} (line ${placeholder.line}) has no value: ${why}`,
      { placeholder: placeholder.raw, line: placeholder.line, column: placeholder.column },
    ),
  );
}
