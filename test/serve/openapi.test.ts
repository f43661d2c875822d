import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toJSONSchema } from "zod/mini";
import { apiRoutes } from "../../src/inspect/api-router.js";
import { startInspectServer } from "../../src/inspect/server.js";
import { startRoutes } from "../../src/serve/routes.js";
import { type ServeServer, startServeServer } from "../../src/serve/server.js";
import { SqliteStore } from "../../src/store/index.js";
import type * as z from "../../src/zod.js";
import { servedProject } from "../support/served-project.js";

interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: { "application/json": { schema: Record<string, unknown> } } };
}
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

describe("the OpenAPI description at /api/v1/openapi.json", () => {
  let server: ServeServer;
  let store: SqliteStore;
  let description: Document;
  let routes: ReturnType<typeof apiRoutes>;
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${server.apiUrl.replace(/\/api\/v1$/, "")}${path}`, {
      method,
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  const codeOf = async (response: Response) =>
    ((await response.json()) as { error?: { code: string } }).error?.code;

  beforeAll(async () => {
    const { root, pipelines } = servedProject();
    const opened = SqliteStore.open(join(root, "runs.db"));
    if (!opened.ok) throw opened.error;
    store = opened.value;
    server = await startServeServer({
      store,
      runs: "in-process",
      pipelinesDir: pipelines,
      settings: { root, mode: "ask" },
    });
    description = (await (await fetch(`${server.apiUrl}/openapi.json`)).json()) as Document;
    routes = apiRoutes(
      startRoutes({
        store: async () => store,
        pipelinesDir: pipelines,
        settings: { root, mode: "ask" },
        runs: "in-process",
        started: () => {},
      }),
    );
  });
  afterAll(async () => {
    await server?.close();
    store?.close();
  });

  const operations = () =>
    Object.entries(description.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );

  it("is OpenAPI 3.1 and describes exactly the routes the server answers", () => {
    expect(description.openapi).toBe("3.1.0");
    expect(
      operations()
        .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
        .sort(),
    ).toEqual(routes.map((route) => `${route.method} /api/v1${route.path}`).sort());
  });

  it("describes every route the page uses, and the page uses no route outside /api/v1", () => {
    const described = operations().map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    const pageRoutes = [
      "GET /api/v1/health",
      "GET /api/v1/live",
      "GET /api/v1/live/{rootId}/graph",
      "GET /api/v1/runs",
      "GET /api/v1/runs/{runId}",
      "GET /api/v1/runs/{runId}/graph",
      "GET /api/v1/runs/{runId}/steps",
      "GET /api/v1/runs/{runId}/steps/{step}",
      "GET /api/v1/runs/{runId}/transcripts/{stageExecutionId}",
      "GET /api/v1/runs/{runId}/grants/{proposalId}",
      "POST /api/v1/runs/{runId}/grants/{proposalId}",
      "POST /api/v1/runs/{runId}/asks/{stageExecutionId}",
      "POST /api/v1/runs/{runId}/fork",
      "POST /api/v1/runs/{runId}/cancel",
      "POST /api/v1/runs/{runId}/override",
      "POST /api/v1/runs/{runId}/redo",
      "GET /api/v1/compare/{runA}/{runB}",
    ];
    expect(described).toEqual(expect.arrayContaining(pageRoutes));
    const page = join(import.meta.dirname, "../../visualizer/src");
    for (const file of readdirSync(page))
      expect(readFileSync(join(page, file), "utf8"), file).not.toMatch(/\/api\/(?!v1\/)/);
  });

  it("is the same API under stagechart inspect, without the starts (it serves no pipelines)", async () => {
    const inspect = await startInspectServer({ store, port: 0 });
    try {
      const base = `http://127.0.0.1:${inspect.port}/api/v1`;
      const own = (await (await fetch(`${base}/openapi.json`)).json()) as Document;
      const ownOperations = Object.entries(own.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      );
      expect(ownOperations.sort()).toEqual(
        operations()
          .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
          .filter((route) => route !== "POST /api/v1/runs" && route !== "GET /api/v1/pipelines")
          .sort(),
      );
      const start = await fetch(`${base}/runs`, { method: "POST", body: "{}" });
      expect([start.status, await codeOf(start)]).toEqual([404, "Validation/RouteNotFound"]);
    } finally {
      await inspect.close();
    }
  });

  it("has an answer at every route it describes (never no-such-route)", async () => {
    for (const { path, method } of operations()) {
      const concrete = path.replace(/\{[^}]+\}/g, "no-such-thing");
      const response = await call(
        method.toUpperCase(),
        concrete,
        method === "post" ? {} : undefined,
      );
      expect(await codeOf(response), `${method} ${path}`).not.toBe("Validation/RouteNotFound");
    }
  });

  it.each([
    ["POST", "/api/v1/runs/r1/control"],
    ["GET", "/api/v1/runs/r1/nothing"],
    ["GET", "/api/runs"],
    ["DELETE", "/api/v1/runs"],
    ["GET", "/api/v1/runs/"],
  ])("answers no route it does not describe: %s %s", async (method, path) => {
    const response = await call(method, path);
    expect(response.status).toBe(404);
    expect(await codeOf(response)).toBe("Validation/RouteNotFound");
  });

  it("gives each body as the zod schema the route validates it with", async () => {
    for (const route of routes.filter((r) => r.body)) {
      const operation = description.paths[`/api/v1${route.path}`]?.[route.method.toLowerCase()];
      const { $schema: _, ...expected } = toJSONSchema(route.body as z.ZodMiniType, {
        io: "input",
      }) as Record<string, unknown>;
      expect(operation?.requestBody?.content["application/json"].schema).toEqual(expected);
      // Each body is a closed object: a field it does not describe is refused before anything runs.
      expect(expected).toMatchObject({ type: "object", additionalProperties: false });
      const concrete = route.path.replace(/\{[^}]+\}/g, "no-such-thing");
      const refused = await call(route.method, `/api/v1${concrete}`, { undescribed: 1 });
      expect(refused.status, route.path).toBe(400);
      expect(await codeOf(refused)).toBe("Validation/RequestBodyInvalid");
    }
  });

  it("describes the Idempotency-Key header of a start and the bearer scheme", () => {
    const start = description.paths["/api/v1/runs"]?.post;
    expect(start?.parameters).toContainEqual(
      expect.objectContaining({ name: "Idempotency-Key", in: "header" }),
    );
    expect(description).toMatchObject({
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    });
  });
});
