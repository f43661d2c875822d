// The JSON Schema conversion is not in stagechart's own zod bundle, which every command loads:
// only the description needs it (loaded on its first request), so it comes from the installed
// zod, which reads any zod schema's `_zod`.
import { toJSONSchema } from "zod/mini";
import { VERSION } from "../version.js";
import type * as z from "../zod.js";
import { API_PREFIX, type Route } from "./api-route.js";
import { ERROR_SCHEMA } from "./api-schemas.js";

/** The refusals any route may give, by status. */
const REFUSALS: Record<string, string> = {
  400: "a bad body, query or header (`Validation/…`)",
  401: "no access token, or another (`Validation/ApiTokenMissing`)",
  404: "no such run or route",
  409: "the run's state refuses the request (nothing waits for that answer, a key reused, …)",
};

/**
 * The OpenAPI 3.1 description of the routes: each body's schema is its zod schema as JSON Schema
 * (the one the route validates with), each path parameter a string of one path part.
 */
export function openApiOf(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters = [
      ...[...route.path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({
        name,
        in: "path",
        required: true,
        schema: { type: "string" },
        description: "percent-encoded (a stage execution id holds `/`: `%2F`)",
      })),
      ...(route.query ?? []).map(({ name, description, schema }) => ({
        name,
        in: "query",
        required: false,
        description,
        schema,
      })),
      ...(route.headers ?? []).map(({ name, description, schema }) => ({
        name,
        in: "header",
        required: false,
        description,
        schema,
      })),
    ];
    const responses = Object.fromEntries([
      ...Object.entries(route.responses).map(([status, description]) => [
        status,
        { description, content: { "application/json": { schema: {} } } },
      ]),
      ...Object.entries(REFUSALS).map(([status, description]) => [
        status,
        {
          description,
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      ]),
    ]);
    paths[`${API_PREFIX}${route.path}`] ??= {};
    (paths[`${API_PREFIX}${route.path}`] as Record<string, unknown>)[route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description && { description: route.description }),
      ...(parameters.length > 0 && { parameters }),
      ...(route.body && {
        requestBody: {
          required: true,
          content: { "application/json": { schema: schemaOf(route.body) } },
        },
      }),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "stagechart",
      version: VERSION,
      description:
        "List, show, answer, fork and control stagechart runs (and, under `stagechart serve`, start them): the API the inspect page itself uses. Every route needs the server's access token as `Authorization: Bearer <token>` when it has one (always, off loopback).",
    },
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { Error: ERROR_SCHEMA },
    },
    paths,
  };
}

/** A body's JSON Schema as the route takes it (its input), without the `$schema` line OpenAPI does not want. */
function schemaOf(schema: z.ZodMiniType): Record<string, unknown> {
  const { $schema: _, ...rest } = toJSONSchema(schema, { io: "input" }) as Record<string, unknown>;
  return rest;
}
