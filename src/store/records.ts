import { isRecord } from "../definitions/contract.js";
import { err, ok, type Result } from "../errors.js";
import {
  type AuditEvent,
  type AuditEventInput,
  type AuditEventType,
  isAuditEventType,
} from "../events/audit.js";
import type {
  NewRun,
  RunPatch,
  RunRecord,
  StoredSnapshot,
  StoredStatus,
} from "../runtime/run-records.js";
import { storeCorrupt } from "../runtime/stored-rows.js";
import { VERSION } from "../version.js";
import { isValidRunId } from "./run-ids.js";
import { runIdInvalid, snapshotCorrupt } from "./store-errors.js";

/** The record of a run stored `at`, as `run` asks; `Validation/RunIdInvalid` for an id that cannot be one. */
export function newRunRecord(run: NewRun, at: string): Result<RunRecord> {
  if (!isValidRunId(run.runId)) return err(runIdInvalid(run.runId));
  return ok({
    runId: run.runId,
    pipelineId: run.pipelineId,
    status: run.status ?? "running",
    createdAt: at,
    updatedAt: at,
    definitionHash: run.definitionHash,
    stagechartVersion: VERSION,
    options: run.options,
  });
}

/**
 * A stored snapshot read back: `read()` rebuilds it from what the store holds (its keyframe and
 * patches), with `stamp`; `Session/SnapshotCorrupt` when that does not work out.
 */
export function decodeSnapshot(
  runId: string,
  stamp: Omit<StoredSnapshot, "snapshot">,
  read: () => unknown,
): Result<StoredSnapshot> {
  try {
    return ok({ snapshot: read(), ...stamp });
  } catch (cause) {
    return err(snapshotCorrupt(runId, stamp.updatedAt, cause));
  }
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
  wakeAt: string | null;
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
    wakeAt: run.wakeAt ?? null,
  };
}

/**
 * `row` as `patch` changes it, at `at`: only the columns the patch names are made anew (a run's
 * options, its largest column, are not parsed and stringified again when it ends). An error or
 * output the patch has as undefined is cleared; a status, hash or options it has so are kept.
 */
export function patchedRow(row: RunRow, patch: RunPatch, at: string): RunRow {
  const has = (key: keyof RunPatch) => Object.hasOwn(patch, key);
  return {
    ...row,
    updatedAt: at,
    ...(has("status") && patch.status !== undefined && { status: patch.status }),
    ...(has("definitionHash") &&
      patch.definitionHash !== undefined && { definitionHash: patch.definitionHash }),
    ...(has("options") &&
      patch.options !== undefined && { options: JSON.stringify(patch.options) }),
    ...(has("error") && { error: jsonOrNull(patch.error) }),
    ...(has("output") && { output: jsonOrNull(patch.output) }),
    ...((has("status") || has("wakeAt")) && { wakeAt: patch.wakeAt ?? null }),
  };
}

export function fromRunRow({ options, error, output, wakeAt, ...row }: RunRow): RunRecord {
  const column = (text: string, name: string) =>
    parseColumn(text, `run ${row.runId}'s ${name}`, { runId: row.runId, column: name });
  return {
    ...row,
    options: column(options, "options"),
    ...(error !== null && { error: column(error, "error") }),
    ...(output !== null && { output: column(output, "output") }),
    ...(wakeAt !== null && wakeAt !== undefined && { wakeAt }),
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

/** A step row's audit events and the run's sequence numbers around them. */
export interface StepEventsRow {
  /** The seq of the step's last event (the previous step's when it added none). */
  lastSeq: number;
  /** The previous step's `lastSeq`; 0 for the first step. */
  previous: number;
  /** See `toStepEvents`; null for a step without events. */
  events: string | null;
}

/** An audit event as a step's row stores it: what the emitter gave, stamped with its moment. */
export type StorableEvent = AuditEventInput & { at: string; seq?: number };

/**
 * A step's audit events as its row stores them (one row per step, not one per event):
 * a JSON array in seq order, each event without its run id and seq, which the row implies; or,
 * when its events share fields, `{shared, events}` (see `SHAREABLE`). One `JSON.stringify` of
 * objects of one shape: a step's events are written at every commit.
 */
export function toStepEvents(events: readonly StorableEvent[]): string | null {
  const [first] = events;
  if (first === undefined) return null;
  const alike = <F extends Shareable>(field: F): StorableEvent[F] | undefined => {
    const value = first[field];
    if (events.length === 1 || value === undefined) return undefined;
    return events.every((event) => event[field] === value) ? value : undefined;
  };
  const shared: SharedFields = {
    at: alike("at"),
    stageId: alike("stageId"),
    stageExecutionId: alike("stageExecutionId"),
    attempt: alike("attempt"),
  };
  const stored = events.map((event) => storedEvent(event, shared));
  const sharing = SHAREABLE.some((field) => shared[field] !== undefined);
  return JSON.stringify(sharing ? { shared, events: stored } : stored);
}

/** The fields a step stores once for all its events; undefined: each event has its own. */
type SharedFields = { [F in Shareable]: StorableEvent[F] | undefined };
type Shareable = (typeof SHAREABLE)[number];

/** An event as stored: its fields in one order, a shared one left to the step (undefined). */
const storedEvent = (event: StorableEvent, shared: SharedFields) => ({
  at: shared.at === undefined ? event.at : undefined,
  type: event.type,
  stageId: shared.stageId === undefined ? event.stageId : undefined,
  stageExecutionId: shared.stageExecutionId === undefined ? event.stageExecutionId : undefined,
  attempt: shared.attempt === undefined ? event.attempt : undefined,
  payload: event.payload,
});

/**
 * Fields most of a step's events have alike (the moment, the stage execution): stored once for
 * the step, `{shared, events}`, when every event has the same value, where each event repeated
 * them (about a third of a step's events' bytes).
 */
const SHAREABLE = ["at", "stageId", "stageExecutionId", "attempt"] as const;

/** The events of `rows` (steps, oldest first) numbered after `afterSeq`. */
export const eventsAfter = (runId: string, rows: StepEventsRow[], afterSeq: number): AuditEvent[] =>
  rows.flatMap((row) => fromStepEvents(runId, row)).filter((event) => event.seq > afterSeq);

/**
 * Back to the shape the emitter produced: `{seq, at, type, runId, …optional ids, payload}`,
 * numbered after `previous`. An event whose type or payload does not read back is kept in its
 * place, marked `damaged`; so is each of a step's events when its column does not read back.
 */
export function fromStepEvents(runId: string, row: StepEventsRow): AuditEvent[] {
  const count = row.lastSeq - row.previous;
  const stored = parsedEvents(row.events, count);
  return Array.from({ length: count }, (_, i) => {
    const seq = row.previous + 1 + i;
    const event = stored?.[i];
    if (!isRecord(event)) return damagedEvent(runId, seq, "its step's events do not read back");
    return fromStoredEvent(runId, seq, event);
  });
}

function parsedEvents(text: string | null, count: number): unknown[] | undefined {
  if (text === null) return count === 0 ? [] : undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    const events = Array.isArray(parsed) ? parsed : withShared(parsed);
    return events?.length === count ? events : undefined;
  } catch {
    return undefined;
  }
}

/** A step's `{shared, events}` read back as its events, each with the shared fields. */
function withShared(stored: unknown): unknown[] | undefined {
  if (!isRecord(stored) || !isRecord(stored.shared) || !Array.isArray(stored.events))
    return undefined;
  const shared = stored.shared;
  return stored.events.map((event) => (isRecord(event) ? { ...shared, ...event } : event));
}

function fromStoredEvent(runId: string, seq: number, stored: Record<string, unknown>): AuditEvent {
  const { at, type, stageId, stageExecutionId, attempt, payload } = stored;
  const event = {
    seq,
    at: String(at),
    type: type as AuditEventType,
    runId,
    ...(typeof stageId === "string" && { stageId }),
    ...(typeof stageExecutionId === "string" && { stageExecutionId }),
    ...(typeof attempt === "number" && { attempt }),
  };
  const problem = !isAuditEventType(String(type))
    ? `its type ${JSON.stringify(type)} is not an audit event type`
    : !isRecord(payload)
      ? "its payload is not a JSON object"
      : undefined;
  if (problem === undefined) return { ...event, payload: payload as Record<string, unknown> };
  return { ...event, payload: {}, damaged: `run ${runId}'s audit event ${seq}: ${problem}` };
}

function damagedEvent(runId: string, seq: number, problem: string): AuditEvent {
  const damaged = `run ${runId}'s audit event ${seq}: ${problem}`;
  return { seq, at: "", type: "Unreadable" as AuditEventType, runId, payload: {}, damaged };
}
