import { err, ok, type Result, StagechartError } from "../errors.js";
import * as z from "../zod.js";
import type { ApiContext, ApiReply, ApiRequest } from "./api-context.js";

/** Where the API is mounted. */
export const API_PREFIX = "/api/v1";

/** What a route is called with: the request's path parameters, query, headers and parsed body. */
export interface RouteCall {
  api: ApiContext;
  params: Record<string, string>;
  request: ApiRequest;
  body: unknown;
}

/** A query or header parameter, as the OpenAPI description gives it. */
export interface QueryParameter {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

/**
 * One route of the API: the router answers only the routes of its table, and the OpenAPI
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

/** What a server adds to the API every inspect server answers (`stagechart serve`'s starts). */
export interface ApiExtension {
  routes: readonly Route[];
  /** Told by the health route. */
  facts?: Record<string, unknown>;
}

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

/** A query parameter's refusal. */
export const badQuery = (message: string) =>
  new StagechartError("Validation/RequestBodyInvalid", `a query parameter is invalid: ${message}`);

/** The run a route names, or `Session/RunNotFound` (also while there is no store yet). */
export async function runOf(api: ApiContext, runId: string) {
  const store = await api.store();
  if (!store)
    return err(
      new StagechartError("Session/RunNotFound", `no run ${runId}: there is no store yet`, {
        runId,
      }),
    );
  const run = await store.getRun(runId);
  return run.ok ? ok({ store, run: run.value }) : run;
}
