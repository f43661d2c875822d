import type { JsonValue } from "../definitions/contract.js";
import type { ErrorView } from "../errors.js";
import { type AuditEvent, type AuditEventType, isAuditEventType } from "../inspect/audit.js";
import { type StoredStatus, storeCorrupt } from "../runtime/persistence.js";

/** A run's state as stored; `suspended` is a run parked on a gate or stopped to be resumed. */

export interface RunRecord {
  runId: string;
  pipelineId: string;
  status: StoredStatus;
  createdAt: string;
  updatedAt: string;
  /** The hash of the compiled definition the run was started (or last forced) with. */
  definitionHash: string;
  stagechartVersion: string;
  /** What resuming needs: the pipeline file, the model spec, the root, the mode… */
  options: Record<string, unknown>;
  error?: ErrorView;
  output?: JsonValue;
}

/** A run as `runs` lists it: what tells runs apart, without what resuming one needs. */
export type RunSummary = Pick<
  RunRecord,
  "runId" | "pipelineId" | "status" | "createdAt" | "updatedAt"
>;

/**
 * Which runs to list: at most `limit` (default all), only those with `status`, only those last
 * updated (a step included) after the timestamp `updatedSince`.
 */
export interface RunQuery {
  limit?: number;
  status?: StoredStatus;
  updatedSince?: string;
}

export interface NewRun {
  /** Must not contain `/`: journal and transcript rows find their run by the id's prefix. */
  runId: string;
  pipelineId: string;
  definitionHash: string;
  options: Record<string, unknown>;
  /** Defaults to `running`. */
  status?: StoredStatus;
}

/** Which queued runs a worker takes: only those of these pipelines (by id) when given. */
export interface ClaimFilter {
  pipelineIds?: readonly string[];
}

/**
 * A pipeline's definition as files (issue 15): `entry`, the pipeline file or folder to load, and
 * every file it uses, by path relative to the bundle's root, with its text. Stored by the
 * definition hash of what they load into, so a worker runs exactly what the run was queued with.
 */
export interface DefinitionBundle {
  entry: string;
  files: Record<string, string>;
}

/** Fields to change; a field present with the value `undefined` clears `error` or `output`. */
export type RunPatch = Partial<
  Pick<RunRecord, "status" | "definitionHash" | "options" | "error" | "output">
>;

export interface StoredSnapshot {
  snapshot: unknown;
  definitionHash: string;
  stagechartVersion: string;
  updatedAt: string;
}

export interface RunRow {
  runId: string;
  pipelineId: string;
  status: StoredStatus;
  createdAt: string;
  updatedAt: string;
  definitionHash: string;
  stagechartVersion: string;
  options: string;
  error: string | null;
  output: string | null;
}

export interface AuditRow {
  runId: string;
  seq: number;
  at: string;
  type: AuditEventType;
  stageId: string | null;
  stageExecutionId: string | null;
  attempt: number | null;
  payload: string;
}

const jsonOrNull = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value);

export function toRunRow(run: RunRecord): RunRow {
  return {
    runId: run.runId,
    pipelineId: run.pipelineId,
    status: run.status,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    definitionHash: run.definitionHash,
    stagechartVersion: run.stagechartVersion,
    options: JSON.stringify(run.options),
    error: jsonOrNull(run.error),
    output: jsonOrNull(run.output),
  };
}

export function fromRunRow({ options, error, output, ...row }: RunRow): RunRecord {
  const column = (text: string, name: string) =>
    parseColumn(text, `run ${row.runId}'s ${name}`, { runId: row.runId, column: name });
  return {
    ...row,
    options: column(options, "options"),
    ...(error !== null && { error: column(error, "error") }),
    ...(output !== null && { output: column(output, "output") }),
  };
}

/** A JSON column read back; a damaged one is `Session/StoreCorrupt`, naming what it held. */
function parseColumn(text: string, what: string, context: Record<string, unknown>) {
  try {
    return JSON.parse(text);
  } catch {
    throw storeCorrupt(`${what} is not valid JSON`, context);
  }
}

export function toAuditRow(event: AuditEvent): AuditRow {
  return {
    runId: event.runId,
    seq: event.seq,
    at: event.at,
    type: event.type,
    stageId: event.stageId ?? null,
    stageExecutionId: event.stageExecutionId ?? null,
    attempt: event.attempt ?? null,
    payload: JSON.stringify(event.payload),
  };
}

/**
 * Back to the shape the emitter produced: `{seq, at, type, runId, …optional ids, payload}`. A
 * row whose type or payload does not read back is kept in its place, marked `damaged`.
 */
export function fromAuditRow(row: AuditRow): AuditEvent {
  const event = {
    seq: row.seq,
    at: row.at,
    type: row.type,
    runId: row.runId,
    ...(row.stageId !== null && { stageId: row.stageId }),
    ...(row.stageExecutionId !== null && { stageExecutionId: row.stageExecutionId }),
    ...(row.attempt !== null && { attempt: row.attempt }),
  };
  const payload = parsedPayload(row.payload);
  const problem = !isAuditEventType(row.type)
    ? `its type ${JSON.stringify(row.type)} is not an audit event type`
    : payload === undefined
      ? "its payload is not a JSON object"
      : undefined;
  if (problem === undefined) return { ...event, payload: payload as Record<string, unknown> };
  return {
    ...event,
    payload: {},
    damaged: `run ${row.runId}'s audit event ${row.seq}: ${problem}`,
  };
}

/** A payload column read back: a JSON object, or undefined. */
function parsedPayload(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
