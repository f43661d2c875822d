import { err, ok, type Result, StagechartError } from "../errors.js";
import { answerGrant, failure } from "../inspect/api.js";
import type { ApiContext, ApiReply, ApiRequest } from "../inspect/api-context.js";
import { answerAsk } from "../inspect/ask-answers.js";
import { controlFromPage } from "../inspect/control-route.js";
import { describeStoredRun } from "../inspect/run-view.js";
import type { StoredStatus } from "../runtime/run-records.js";
import * as z from "../zod.js";
import { servedPipelines } from "./run-starter.js";
import { askBody, cancelBody, grantBody, overrideBody, redoBody, startBody } from "./schemas.js";
import { type StartContext, startFromRequest } from "./start-route.js";

/** What a route is called with: the request's path parameters, query, headers and parsed body. */
export interface RouteCall {
  api: ApiContext;
  start: StartContext;
  params: Record<string, string>;
  request: ApiRequest;
  body: unknown;
}

/** A query parameter, as the OpenAPI description gives it. */
export interface QueryParameter {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

/**
 * One route of the API: the router answers only the routes of this table, and the OpenAPI
 * description is made from the same table, so every route is described and nothing else is.
 */
export interface Route {
  method: "GET" | "POST";
  /** Below the API's prefix, with `{name}` for a path parameter (one path part, percent-encoded). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The body's schema: a body that does not match is `Validation/RequestBodyInvalid` (400). */
  body?: z.ZodMiniType;
  query?: QueryParameter[];
  headers?: QueryParameter[];
  /** Its answers besides the refusals every route may give, by status. */
  responses: Record<string, string>;
  answer(call: RouteCall): Promise<Result<unknown> | ApiReply>;
}

const STORED_STATUSES: readonly StoredStatus[] = [
  "queued",
  "running",
  "suspended",
  "done",
  "failed",
  "cancelled",
];

const needsStore = async (api: ApiContext, runId: string) => {
  const store = await api.store();
  return store
    ? ok(store)
    : err(
        new StagechartError("Session/RunNotFound", `no run ${runId}: there is no store yet`, {
          runId,
        }),
      );
};

const apiControl = (api: ApiContext): ApiContext => ({ ...api, control: () => api.control("api") });

export const ROUTES: Route[] = [
  {
    method: "GET",
    path: "/health",
    operationId: "health",
    summary: "Whether the server has a store, and how it runs the runs it starts",
    responses: { 200: "`{store, runs: in-process | queued}`" },
    answer: async ({ api, start }) => ok({ store: Boolean(await api.store()), runs: start.runs }),
  },
  {
    method: "GET",
    path: "/pipelines",
    operationId: "listPipelines",
    summary: "The names of the pipelines the served directory holds (what a start may name)",
    responses: { 200: "an array of names" },
    answer: async ({ start }) => ok(servedPipelines(start.pipelinesDir)),
  },
  {
    method: "GET",
    path: "/runs",
    operationId: "listRuns",
    summary: "The store's runs, newest first",
    query: [
      {
        name: "status",
        description: "only runs with this status",
        schema: { type: "string", enum: [...STORED_STATUSES] },
      },
      {
        name: "limit",
        description: "at most this many (default 100, at most 1000)",
        schema: { type: "integer", minimum: 1, maximum: 1000 },
      },
    ],
    responses: { 200: "an array of `{runId, pipelineId, status, createdAt, updatedAt}`" },
    answer: async ({ api, request }) => {
      const store = await api.store();
      const limit = Number(request.query.get("limit") ?? 100);
      const status = request.query.get("status");
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        return err(badQuery("limit is a whole number from 1 to 1000"));
      if (status !== null && !STORED_STATUSES.includes(status as StoredStatus))
        return err(badQuery(`status is one of ${STORED_STATUSES.join(", ")}`));
      const query = { limit, ...(status && { status: status as StoredStatus }) };
      return ok(store ? await store.listRuns(query) : []);
    },
  },
  {
    method: "POST",
    path: "/runs",
    operationId: "startRun",
    summary: "Start a run of a served pipeline, or of a definition stored under its hash",
    description:
      "On a SQLite store the run goes in this process; on PostgreSQL it is queued for `stagechart worker`. The run is headless: its grant requests and ask stages suspend it until answered here. With an `Idempotency-Key`, the same key and body give the same run; the same key with another body is refused (409, `Session/IdempotencyKeyReused`).",
    body: startBody,
    headers: [
      {
        name: "Idempotency-Key",
        description:
          "1 to 200 characters: a retried start with the same key and body starts nothing new",
        schema: { type: "string", minLength: 1, maxLength: 200 },
      },
    ],
    responses: {
      201: "`{runId, pipelineId, definitionHash, status: running | queued}`",
      200: "the run an earlier start with the same key and body started (`Idempotent-Replayed: true`)",
    },
    answer: (call) => startFromRequest(call.start, call.request, call.body as never),
  },
  {
    method: "GET",
    path: "/runs/{runId}",
    operationId: "showRun",
    summary: "A run: its record, status, stages, what it waits for, its audit timeline",
    responses: { 200: "the run" },
    answer: async ({ api, params }) => {
      const store = await needsStore(api, params.runId ?? "");
      return store.ok ? describeStoredRun(store.value, params.runId ?? "") : store;
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/audit",
    operationId: "runAudit",
    summary: "A run's audit events, oldest first",
    query: [
      {
        name: "after",
        description: "only the events after this sequence number",
        schema: { type: "integer", minimum: 0 },
      },
    ],
    responses: { 200: "an array of audit events" },
    answer: async ({ api, params, request }) => {
      const runId = params.runId ?? "";
      const after = Number(request.query.get("after") ?? 0);
      if (!Number.isInteger(after) || after < 0) return err(badQuery("after is a whole number"));
      const store = await needsStore(api, runId);
      if (!store.ok) return store;
      const run = await store.value.getRun(runId);
      return run.ok ? ok(await store.value.auditOf(runId, after)) : run;
    },
  },
  {
    method: "POST",
    path: "/runs/{runId}/grants/{proposalId}",
    operationId: "answerGrant",
    summary: "Approve or deny a grant request the run waits for",
    body: grantBody,
    responses: { 200: "`{answered: live | resumed}`" },
    answer: async ({ api, params, body }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      return answerGrant(apiControl(api), runId, params.proposalId ?? "", body);
    },
  },
  {
    method: "POST",
    path: "/runs/{runId}/asks/{stageExecutionId}",
    operationId: "answerAsk",
    summary: "Answer an ask stage the run waits for (checked against the stage's schema)",
    body: askBody,
    responses: { 200: "`{answered: live | resumed}`" },
    answer: async ({ api, params, body }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      return answerAsk(apiControl(api), runId, params.stageExecutionId ?? "", body);
    },
  },
  controlRoute("cancel", "CANCEL", cancelBody, "Cancel the run"),
  controlRoute("override", "OVERRIDE", overrideBody, "Send the run to another stage"),
  controlRoute("redo", "REDO", redoBody, "Run a stage of the run again"),
];

function controlRoute(
  name: string,
  type: "CANCEL" | "OVERRIDE" | "REDO",
  body: z.ZodMiniType,
  summary: string,
): Route {
  return {
    method: "POST",
    path: `/runs/{runId}/${name}`,
    operationId: `${name}Run`,
    summary,
    description:
      "Through the one control path (`RunControl`): a queued run is cancelled in place, a live run's owner is asked through the store, a run nobody owns is resumed here with it.",
    body,
    responses: { 200: "`{runId, control, outcome: applied | cancelled | resumed}`" },
    answer: async ({ api, params, body: given }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      const control = await api.control("api");
      if (!control)
        return err(new StagechartError("Session/RunNotFound", `no run ${runId}`, { runId }));
      const fields = given as { reason?: string };
      const reason =
        type === "CANCEL" ? { reason: fields.reason ?? "cancelled over the HTTP API" } : {};
      return controlFromPage(control, runId, { ...fields, ...reason, type });
    },
  };
}

async function runOf(api: ApiContext, runId: string): Promise<Result<unknown>> {
  const store = await needsStore(api, runId);
  if (!store.ok) return store;
  return store.value.getRun(runId);
}

const badQuery = (message: string) =>
  new StagechartError("Validation/RequestBodyInvalid", `a query parameter is invalid: ${message}`);

/** The route a method and path (split, decoded, below the prefix) name, with its parameters. */
export function matchRoute(
  routes: readonly Route[],
  method: string,
  parts: readonly string[],
): { route: Route; params: Record<string, string> } | undefined {
  for (const route of routes) {
    if (route.method !== method) continue;
    const pattern = route.path.split("/").slice(1);
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const matches = pattern.every((part, i) => {
      const given = parts[i] ?? "";
      const name = /^\{(.+)\}$/.exec(part)?.[1];
      if (name === undefined) return part === given;
      params[name] = given;
      return given.length > 0;
    });
    if (matches) return { route, params };
  }
  return undefined;
}

/** The body a route's schema accepts, or the coded refusal naming each problem. */
export function parseBody(route: Route, text: string | undefined): Result<unknown> {
  if (!route.body) return ok(undefined);
  const refused = (problems: string[]) =>
    err(
      new StagechartError(
        "Validation/RequestBodyInvalid",
        `the body of ${route.method} ${route.path} is invalid: ${problems.join("; ")}`,
        { problems },
      ),
    );
  if (text === undefined) return refused(["it is larger than 64 KiB"]);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return refused(["it is not JSON"]);
  }
  const parsed = z.safeParse(route.body, json);
  if (parsed.success) return ok(parsed.data);
  return refused(
    parsed.error.issues.map((issue) =>
      issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message,
    ),
  );
}

export { failure };
