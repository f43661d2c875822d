import { generateSync } from "json-schema-faker";
import { holds } from "../compiler/conditions.js";
import type { JsonValue } from "../definitions/contract.js";
import { compileSchema, type JsonSchema } from "../definitions/json-schema.js";
import type { Condition } from "../definitions/pipeline-types.js";

/** A condition on the completion payload: `{path, op, value}` with `path` under output or parsed. */
export type PayloadCondition = Extract<Condition, { path: string }>;

/** One condition and whether the payload must make it hold. */
export interface Requirement {
  condition: PayloadCondition;
  holds: boolean;
  /** A map fan-out's list of this many items, which the condition's value is (see `listRows`). */
  items?: number;
}

export type Payload = { ok: true; value: Record<string, unknown> } | { ok: false; reason: string };

const SAMPLES = 6;

/** `output.approved equals true`, as the graph labels rules. */
export const describeRequirement = ({ condition, holds: wanted, items }: Requirement): string => {
  if (items !== undefined) return `${condition.path} has ${items} item${items === 1 ? "" : "s"}`;
  const text =
    condition.op === "exists"
      ? `${condition.path} exists${condition.value === false ? " false" : ""}`
      : `${condition.path} ${condition.op} ${JSON.stringify(condition.value)}`;
  return wanted ? text : `not ${text}`;
};

/** The payload field a condition reads: `output.a.b` and `parsed.a.b` both read `a.b`. */
export const fieldOf = (condition: PayloadCondition): string[] =>
  condition.path.split(".").slice(1);

/**
 * A completion payload the stage's `completionSchema` accepts and that makes each requirement
 * hold or not as asked: sampled from the schema with json-schema-faker (seeded, so the same
 * stage gets the same payload), then each required field set to the first candidate value that
 * gives every requirement its truth and keeps the payload valid. None: the reason why.
 */
export function payloadFor(
  schema: JsonSchema,
  requirements: readonly Requirement[],
  seed = 1,
  /** What the stage hands on as `output` from a payload (its YAML `output:` fields). */
  handOn: (payload: Record<string, unknown>) => unknown = (payload) => payload,
): Payload {
  const validate = compileSchema(schema);
  if (!validate.ok) return { ok: false, reason: "the completionSchema does not compile" };
  const base = sample(schema, seed);
  if (base === undefined)
    return { ok: false, reason: "json-schema-faker found no payload the schema accepts" };
  return fitted(schema, base, requirements, { seed, handOn, keep: false });
}

/**
 * What code handed on (`output`), with the fields the requirements read set so that each holds
 * or not as asked — a field that already does is kept — and the rest left as the code made it.
 * None: not an object, or no value makes them hold.
 */
export function fitOutput(output: unknown, requirements: readonly Requirement[]): Payload {
  if (!isObject(output)) return { ok: false, reason: "the output is not an object" };
  return fitted(ANY_OBJECT, output, requirements, {
    seed: 1,
    handOn: (payload) => payload,
    keep: true,
  });
}

/** Any object: what code hands on, as far as the model knows. */
export const ANY_OBJECT = { type: "object" } as const;

/**
 * `base` with each field the requirements read set to the first candidate that gives them their
 * truth; with `keep`, the field's own value is the first candidate.
 */
function fitted(
  schema: JsonSchema,
  base: Record<string, unknown>,
  requirements: readonly Requirement[],
  {
    seed,
    handOn,
    keep,
  }: { seed: number; handOn: (payload: Record<string, unknown>) => unknown; keep: boolean },
): Payload {
  const validate = compileSchema(schema);
  if (!validate.ok) return { ok: false, reason: "the completionSchema does not compile" };
  const byField = new Map<string, Requirement[]>();
  for (const requirement of requirements) {
    const key = fieldOf(requirement.condition).join(".");
    byField.set(key, [...(byField.get(key) ?? []), requirement]);
  }
  let payload = base;
  for (const [field, wanted] of byField) {
    const path = field.split(".");
    const own = keep ? [{ value: valueAt(payload, path) }] : [];
    const chosen = [...own, ...candidates(schema, path, wanted, seed)].find((candidate) => {
      const next = withValue(payload, path, candidate.value);
      return (
        wanted.every((r) => truthOf(r.condition, next, handOn(next)) === r.holds) &&
        validate.value(next)
      );
    });
    if (chosen === undefined)
      return {
        ok: false,
        reason: `no payload the completionSchema accepts makes ${wanted.map(describeRequirement).join(" and ")}`,
      };
    payload = withValue(payload, path, chosen.value);
  }
  return validate.value(payload)
    ? { ok: true, value: payload }
    : { ok: false, reason: "the payload does not satisfy the completionSchema" };
}

/** A payload the schema refuses, for a parse failure: the required fields left out, or a non-object. */
export function brokenPayload(schema: JsonSchema): Record<string, unknown> {
  const validate = compileSchema(schema);
  const attempt = { "not-in-the-schema": true };
  return validate.ok && !validate.value(attempt) ? attempt : { "": null };
}

function sample(schema: JsonSchema, seed: number): Record<string, unknown> | undefined {
  const validate = compileSchema(schema);
  for (let i = 0; i < SAMPLES; i++) {
    const value = generateSync(schema as never, { seed: seed + i }) as Record<string, unknown>;
    if (validate.ok && validate.value(value) && isObject(value)) return value;
  }
  return undefined;
}

type Candidate = { value: unknown };

/** Values worth trying at a field: the conditions' own values and their neighbours, the schema's, samples; or none. */
function candidates(
  schema: JsonSchema,
  path: string[],
  wanted: readonly Requirement[],
  seed: number,
): Candidate[] {
  const sub = subSchema(schema, path);
  const values: unknown[] = [];
  for (const { condition } of wanted) {
    const v = condition.value;
    if (condition.op === "in" && Array.isArray(v)) values.push(...v);
    else values.push(v);
    if (typeof v === "number") values.push(v - 1, v + 1, v - 0.5, v + 0.5);
    if (typeof v === "boolean") values.push(!v);
    if (typeof v === "string") values.push(`${v}-other`, "");
  }
  if (sub) {
    if (Array.isArray(sub.enum)) values.push(...sub.enum);
    if ("const" in sub) values.push(sub.const);
    for (let i = 0; i < SAMPLES; i++)
      values.push(generateSync(sub as never, { seed: seed + 100 + i }));
  }
  values.push(true, false, 0, 1, -1, "x", null, [], {});
  return [...values.map((value) => ({ value })), { value: undefined }];
}

function subSchema(schema: JsonSchema, path: string[]): JsonSchema | undefined {
  let current: unknown = schema;
  for (const segment of path) {
    const properties = isObject(current) ? current.properties : undefined;
    current = isObject(properties) ? properties[segment] : undefined;
  }
  return isObject(current) ? current : undefined;
}

function valueAt(payload: Record<string, unknown>, path: readonly string[]): unknown {
  let current: unknown = payload;
  for (const segment of path) current = isObject(current) ? current[segment] : undefined;
  return current;
}

/** A copy of `payload` with `value` at `path` (removed when undefined). */
function withValue(
  payload: Record<string, unknown>,
  path: string[],
  value: unknown,
): Record<string, unknown> {
  const [head, ...rest] = path as [string, ...string[]];
  const copy = { ...payload };
  if (rest.length === 0) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
    return copy;
  }
  const inner = isObject(copy[head]) ? (copy[head] as Record<string, unknown>) : {};
  copy[head] = withValue(inner, rest, value);
  return copy;
}

function truthOf(
  condition: PayloadCondition,
  payload: Record<string, unknown>,
  output: unknown,
): boolean {
  const facts = {
    verdict: "ok" as const,
    output: output as JsonValue,
    parsed: payload as JsonValue,
  };
  return holds(condition, { ...facts, ctx: {}, visits: {} }, {});
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
