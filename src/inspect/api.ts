import { type ErrorCode, err, ok, type Result, StagechartError } from "../errors.js";
import { runIdOfExecution, runIdOfJournalKey } from "../store/run-ids.js";
import * as z from "../zod.js";
import type { ApiContext, ApiReply } from "./api-context.js";
import { answerAsk } from "./ask-answers.js";
import { compareStoredRuns } from "./compare-route.js";
import { controlFromPage } from "./control-route.js";
import { forkFromPage } from "./fork-route.js";
import { grantViewOf } from "./grant-view.js";
import { liveGraphOf, runGraphOf } from "./run-graph.js";
import { describeStoredRun } from "./run-view.js";
import { stepView } from "./steps.js";
import { RUN_LIST_LIMIT } from "./store-watch.js";

export type { ApiReply } from "./api-context.js";

const DECISIONS = ["approve", "deny"] as const;

/** One API request: `/api/…` routes over the store and the live registry. Never throws. */
export async function answerApi(
  context: ApiContext,
  method: string,
  path: string,
  body: unknown,
): Promise<ApiReply> {
  try {
    const reply = await route(
      context,
      method,
      path.split("/").slice(2).map(decodeURIComponent),
      body,
    );
    return reply.ok ? { status: 200, body: reply.value } : failure(reply.error);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return failure(new StagechartError("ExtensionHost/InspectFailed", message));
  }
}

async function route(
  context: ApiContext,
  method: string,
  parts: string[],
  body: unknown,
): Promise<Result<unknown>> {
  const store = await context.store();
  const [area, id, what, key] = parts;
  if (method === "GET" && area === "health" && !id)
    return ok({ store: Boolean(store), startsRuns: context.fork !== undefined });
  if (method === "GET" && area === "live" && !id) return ok(context.live.list());
  if (method === "GET" && area === "live" && id && what === "graph" && !key) {
    const definition = context.live.definitionOf(id);
    if (!definition) return err(notFound("Session/ActorNotFound", `no live actor ${id}`, { id }));
    return ok(await liveGraphOf(definition));
  }
  if (method === "GET" && area === "compare" && id && what && !key) {
    if (!store)
      return err(
        notFound("Session/RunNotFound", `no run ${id}: there is no store yet`, { runId: id }),
      );
    return compareStoredRuns(store, id, what);
  }
  if (area !== "runs")
    return err(
      notFound("Validation/RouteNotFound", `no route ${method} /api/${parts.join("/")}`, {}),
    );
  if (method === "GET" && !id)
    return ok(store ? await store.listRuns({ limit: RUN_LIST_LIMIT }) : []);
  if (!id) return err(notFound("Validation/RouteNotFound", `no route ${method} /api/runs`, {}));
  if (!store)
    return err(
      notFound("Session/RunNotFound", `no run ${id}: there is no store yet`, { runId: id }),
    );
  const run = await store.getRun(id);
  if (!run.ok) return run;
  if (method === "POST" && what === "grants" && key) return answerGrant(context, id, key, body);
  if (method === "POST" && what === "control" && !key) {
    const control = await context.control();
    if (control) return controlFromPage(control, id, body);
  }
  if (method === "POST" && what === "asks" && key) return answerAsk(context, id, key, body);
  if (method === "POST" && what === "fork" && !key) return forkFromPage(context.fork, id, body);
  if (method !== "GET")
    return err(
      notFound("Validation/RouteNotFound", `no route ${method} /api/runs/${id}/${what ?? ""}`, {}),
    );
  switch (what) {
    case undefined:
      return describeStoredRun(store, id);
    case "audit":
      return ok(await store.auditOf(id));
    case "graph":
      return runGraphOf(store, run.value);
    case "steps": {
      if (key === undefined) return ok(await store.stepsOf(id));
      const view = await stepView(store, id, Number(key));
      if (view) return ok(view);
      return err(
        notFound("Session/StepNotFound", `run ${id} has no step ${key}`, { runId: id, step: key }),
      );
    }
    case "grants":
      if (key !== undefined) return grantViewOf(store, context.live, id, key);
      return ok(context.live.pendingOf(id));
    case "asks":
      return ok(context.live.asks.pendingOf(id));
    case "transcripts":
      if (!key || runIdOfExecution(key) !== id) break;
      return ok(await store.read(key));
    case "journal":
      if (!key || runIdOfJournalKey(key) !== id) break;
      return ok((await store.get(key, z.unknown())) ?? null);
  }
  return err(
    notFound(
      "Validation/RouteNotFound",
      `no route GET /api/runs/${id}/${what}${key ? `/${key}` : ""}`,
      {},
    ),
  );
}

/**
 * An answer to a grant request: given to the live run that asks, or to the suspended run that
 * waits for it by a resume (through `RunControl`); one nobody waits for is `Session/NoPendingGrant`.
 */
export async function answerGrant(
  context: ApiContext,
  runId: string,
  proposalId: string,
  body: unknown,
): Promise<Result<unknown>> {
  const decision = (body as { decision?: unknown } | undefined)?.decision;
  if (!DECISIONS.includes(decision as never))
    return err(
      new StagechartError("Validation/GrantDecisionInvalid", `decision must be approve or deny`, {
        decision,
      }),
    );
  const answer = decision as "approve" | "deny";
  if (context.live.answer(runId, proposalId, answer)) return ok({ answered: "live" });
  const store = await context.store();
  const run = store ? await describeStoredRun(store, runId) : undefined;
  const waits =
    run?.ok && run.value.waiting?.some((w) => w.kind === "grant" && w.proposalId === proposalId);
  const control = waits && context.resumesRuns ? await context.control() : undefined;
  if (!control)
    return err(
      new StagechartError(
        "Session/NoPendingGrant",
        `run ${runId} has no grant request ${proposalId} waiting`,
        {
          runId,
          proposalId,
        },
      ),
    );
  void control.approve(runId, proposalId, answer).catch(() => undefined);
  return ok({ answered: "resumed" });
}

const notFound = (
  code: Extract<ErrorCode, `${"Session" | "Validation"}/${string}`>,
  message: string,
  ctx: Record<string, unknown>,
) => new StagechartError(code, message, ctx);

const STATUS_OF: Record<string, number> = {
  "Session/RunExists": 409,
  "Session/IdempotencyKeyReused": 409,
  "Session/DefinitionNotFound": 404,
  "Session/StoreUnavailable": 503,
  "Validation/ApiTokenMissing": 401,
  "Session/RunNotFound": 404,
  "Session/ActorNotFound": 404,
  "Session/StepNotFound": 404,
  "Validation/RouteNotFound": 404,
  "Session/NoPendingGrant": 409,
  "Session/RunNotLive": 409,
  "Session/IllegalTransition": 409,
  "Session/ControlExpired": 409,
  "Session/ControlTaken": 409,
  "Session/ControlTimeout": 504,
  "Session/NoPendingInput": 409,
  "Session/ForkNotServed": 409,
  "Session/ForkUnavailable": 409,
  "Session/DefinitionDrift": 409,
};

/** The reply of a refused request: its status from the error's code, the error as its body. */
export function failure(error: StagechartError): ApiReply {
  const status = STATUS_OF[error.code] ?? (error.class === "Validation" ? 400 : 500);
  return { status, body: { error: error.toModelView() } };
}
