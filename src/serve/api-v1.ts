import { ok, StagechartError } from "../errors.js";
import type { ApiContext, ApiReply, ApiRequest, ExtraApi } from "../inspect/api-context.js";
import { API_PREFIX, openApiOf } from "./openapi.js";
import { failure, matchRoute, parseBody, ROUTES, type Route } from "./routes.js";
import type { StartContext } from "./start-route.js";

/** The description's own route: what it describes includes it. */
const OPENAPI_ROUTE: Route = {
  method: "GET",
  path: "/openapi.json",
  operationId: "openApi",
  summary: "This description (OpenAPI 3.1)",
  responses: { 200: "the OpenAPI document" },
  answer: async () => ok(openApiOf(API_ROUTES)),
};

/** Every route of the API, in the order the description lists them. */
export const API_ROUTES: readonly Route[] = [OPENAPI_ROUTE, ...ROUTES];

/**
 * The versioned API (`/api/v1/…`), mounted on the inspect server beside the page's own `/api/…`:
 * a route of the table, its body checked against the route's schema first; anything else is
 * `Validation/RouteNotFound`. A refusal is `{error: {code, message, …}}` with its status, never
 * a stack trace: a throw is answered as `ExtensionHost/InspectFailed` (500).
 */
export function apiV1(start: StartContext): ExtraApi {
  return {
    prefix: `${API_PREFIX}/`,
    answer: (api, request) => answerV1(api, start, request),
  };
}

async function answerV1(
  api: ApiContext,
  start: StartContext,
  request: ApiRequest,
): Promise<ApiReply> {
  try {
    const matched = matchRoute(API_ROUTES, request.method, request.parts);
    if (!matched)
      return failure(
        new StagechartError(
          "Validation/RouteNotFound",
          `no route ${request.method} ${API_PREFIX}/${request.parts.join("/")}`,
          {},
        ),
      );
    const body = parseBody(matched.route, request.text);
    if (!body.ok) return failure(body.error);
    const answer = await matched.route.answer({
      api,
      start,
      params: matched.params,
      request,
      body: body.value,
    });
    if ("status" in answer) return answer;
    return answer.ok ? { status: 200, body: answer.value } : failure(answer.error);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return failure(new StagechartError("ExtensionHost/InspectFailed", message));
  }
}
