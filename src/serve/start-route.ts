import { createHash, randomUUID } from "node:crypto";
import { err, type Result, StagechartError } from "../errors.js";
import type { ApiReply, ApiRequest } from "../inspect/api-context.js";
import type { RunStore } from "../runtime/store-port.js";
import { type IdempotencyMark, type StarterOptions, startServedRun } from "./run-starter.js";
import type { StartRequest } from "./schemas.js";

/** What the start route needs: the store (undefined until a SQLite file exists) and how runs start. */
export interface StartContext extends StarterOptions {
  store(): Promise<RunStore | undefined>;
}

const MAX_KEY_LENGTH = 200;

/**
 * `POST /runs`. Without an `Idempotency-Key`, a run with a new id (or the body's `runId`). With
 * one, the run's id is made from the key, and the body's fingerprint is stored with the run: a
 * start with the same key and body answers that run again (200, `Idempotent-Replayed: true`),
 * one with another body is `Session/IdempotencyKeyReused` (409). Two such starts at once race for
 * the run's id in the store, which creates it once: the loser answers as a repeat. The key names
 * the run, so a body's `runId` beside a key is refused.
 */
export async function startFromRequest(
  context: StartContext,
  request: ApiRequest,
  body: StartRequest,
): Promise<Result<unknown> | ApiReply> {
  const store = await context.store();
  if (!store)
    return err(new StagechartError("Session/StoreUnavailable", "the server has no store open"));
  const key = headerOf(request, "idempotency-key");
  if (key === undefined) {
    const runId = body.runId ?? `run-${randomUUID().slice(0, 8)}`;
    return created(await startServedRun(store, body, runId, undefined, context));
  }
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || /[^\x20-\x7e]/.test(key))
    return err(
      new StagechartError(
        "Validation/IdempotencyKeyInvalid",
        `an Idempotency-Key is 1 to ${MAX_KEY_LENGTH} printable characters`,
      ),
    );
  if (body.runId !== undefined)
    return err(
      new StagechartError(
        "Validation/RequestBodyInvalid",
        "an Idempotency-Key names the run: give it or a runId, not both",
      ),
    );
  const runId = `run-${createHash("sha256").update(key).digest("hex").slice(0, 20)}`;
  const mark: IdempotencyMark = { request: fingerprintOf(body) };
  const earlier = await repeated(store, runId, mark);
  if (earlier) return earlier;
  const started = await startServedRun(store, body, runId, mark, context);
  if (!started.ok && started.error.code === "Session/RunExists") {
    const raced = await repeated(store, runId, mark);
    if (raced) return raced;
  }
  return created(started);
}

/** The earlier run under the same key: the same run again, or the refusal of another body. */
async function repeated(
  store: RunStore,
  runId: string,
  mark: IdempotencyMark,
): Promise<ApiReply | Result<unknown> | undefined> {
  const run = await store.getRun(runId);
  if (!run.ok) return undefined;
  const stored = (run.value.options.idempotency as IdempotencyMark | undefined)?.request;
  if (stored !== mark.request)
    return err(
      new StagechartError(
        "Session/IdempotencyKeyReused",
        `this Idempotency-Key started run ${runId} with another body: use a new key for another run`,
        { runId },
      ),
    );
  const { pipelineId, definitionHash, status } = run.value;
  return {
    status: 200,
    body: { runId, pipelineId, definitionHash, status },
    headers: { "idempotent-replayed": "true" },
  };
}

const created = (started: Result<unknown>): Result<unknown> | ApiReply =>
  started.ok ? { status: 201, body: started.value } : started;

function headerOf(request: ApiRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}

/** The SHA-256 of a body's JSON with every object's keys sorted: the same body, however ordered. */
export function fingerprintOf(body: unknown): string {
  return createHash("sha256")
    .update(JSON.stringify(sorted(body)))
    .digest("hex");
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
  );
}
