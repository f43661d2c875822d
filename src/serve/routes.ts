import { ok } from "../errors.js";
import type { Route } from "../inspect/api-route.js";
import { servedPipelines } from "./run-starter.js";
import { startBody } from "./schemas.js";
import { type StartContext, startFromRequest } from "./start-route.js";

/**
 * What `stagechart serve` adds to the API every inspect server answers: the pipelines it serves
 * and the start of a run of one. The read and control routes are the inspect server's own.
 */
export function startRoutes(start: StartContext): Route[] {
  return [
    {
      method: "GET",
      path: "/pipelines",
      operationId: "listPipelines",
      summary: "The names of the pipelines the served directory holds (what a start may name)",
      responses: { 200: "an array of names" },
      answer: async () => ok(servedPipelines(start.pipelinesDir)),
    },
    {
      method: "POST",
      path: "/runs",
      operationId: "startRun",
      summary: "Start a run of a served pipeline, or of a definition stored under its hash",
      description:
        "Only under `stagechart serve`. On a SQLite store the run goes in this process; on PostgreSQL it is queued for `stagechart worker`. The run is headless: its grant requests and ask stages suspend it until answered here. With an `Idempotency-Key`, the same key and body give the same run; the same key with another body is refused (409, `Session/IdempotencyKeyReused`).",
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
      answer: (call) => startFromRequest(start, call.request, call.body as never),
    },
  ];
}
