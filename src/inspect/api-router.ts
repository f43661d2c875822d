import { ok, StagechartError } from "../errors.js";
import type { ApiContext, ApiReply, ApiRequest } from "./api-context.js";
import { API_PREFIX, failure, matchRoute, parseBody, type Route } from "./api-route.js";
import { READ_AND_CONTROL_ROUTES } from "./api-routes.js";

/**
 * The routes of a server's API: its description, the read and control routes every inspect
 * server answers, and those its caller adds (`stagechart serve`'s starts), in the order the
 * description lists them.
 */
export function apiRoutes(added: readonly Route[] = []): readonly Route[] {
  const routes: Route[] = [
    {
      method: "GET",
      path: "/openapi.json",
      operationId: "openApi",
      summary: "This description (OpenAPI 3.1)",
      responses: { 200: "the OpenAPI document" },
      // Loaded on the first request: the JSON Schema conversion is not needed by anything else.
      answer: async () => ok((await import("./openapi.js")).openApiOf(routes)),
    },
    ...READ_AND_CONTROL_ROUTES,
    ...added,
  ];
  return routes;
}

/**
 * One request to the API (`/api/v1/…`): a route of the table, its body checked against the
 * route's schema first; anything else is `Validation/RouteNotFound`. A refusal is
 * `{error: {code, message, …}}` with its status, never a stack trace: a throw is answered as
 * `ExtensionHost/InspectFailed` (500).
 */
export async function answerApi(
  api: ApiContext,
  routes: readonly Route[],
  request: ApiRequest,
): Promise<ApiReply> {
  try {
    const matched = matchRoute(routes, request.method, request.parts);
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
