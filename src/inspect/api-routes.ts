import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { err, ok, StagechartError } from "../errors.js";
import type { StoredStatus } from "../runtime/run-records.js";
import { runIdOfExecution, runIdOfJournalKey } from "../store/run-ids.js";
import * as z from "../zod.js";
import type { ApiContext, ApiRequest } from "./api-context.js";
import { badQuery, type QueryParameter, type Route, runOf } from "./api-route.js";
import { askBody, cancelBody, forkBody, grantBody, overrideBody, redoBody } from "./api-schemas.js";
import { answerAsk } from "./ask-answers.js";
import { compareStoredRuns } from "./compare-route.js";
import { controlRun } from "./control-route.js";
import { forkFromPage, type PageFork } from "./fork-route.js";
import { answerGrant } from "./grant-answers.js";
import { grantViewOf } from "./grant-view.js";
import { liveGraphOf, runGraphOf } from "./run-graph.js";
import { describeStoredRun } from "./run-view.js";
import { stepView } from "./steps.js";
import { RUN_LIST_LIMIT } from "./store-watch.js";

const STORED_STATUSES: readonly StoredStatus[] = [
  "queued",
  "running",
  "suspended",
  "done",
  "failed",
  "cancelled",
];

/** Who acts, as the audit records it: the caller may name itself (the page says `visualizer`). */
const CLIENT_HEADER: QueryParameter = {
  name: "X-Stagechart-Client",
  description:
    "who asks, recorded in the run's audit as `by` (1 to 40 letters, digits, `.`, `_` or `-`; default `api`)",
  schema: { type: "string", pattern: "^[A-Za-z0-9._-]{1,40}$" },
};

const clientOf = (request: ApiRequest): string => {
  const given = request.headers["x-stagechart-client"];
  return typeof given === "string" && /^[A-Za-z0-9._-]{1,40}$/.test(given) ? given : "api";
};

/** The context whose control (`RunControl`) audits its acts as done by the request's client. */
const actingFor = (api: ApiContext, request: ApiRequest): ApiContext => ({
  ...api,
  control: () => api.control(clientOf(request)),
});

const routeNotFound = (request: ApiRequest) =>
  new StagechartError(
    "Validation/RouteNotFound",
    `no route ${request.method} /api/v1/${request.parts.join("/")}`,
    {},
  );

/**
 * The read and control routes of the API, which every inspect server answers (`stagechart
 * inspect`, a run's `--inspect`, `stagechart serve`) and the page itself uses: the runs, their
 * steps, charts and audit, the live actors, and the answers and controls that act on a run.
 */
export const READ_AND_CONTROL_ROUTES: readonly Route[] = [
  {
    method: "GET",
    path: "/health",
    operationId: "health",
    summary: "Whether the server has a store, whether it starts runs (forks), and how",
    responses: {
      200: "`{store, startsRuns}`; `stagechart serve` adds `runs: in-process | queued`",
    },
    answer: async ({ api }) =>
      ok({ store: Boolean(await api.store()), startsRuns: api.fork !== undefined, ...api.facts }),
  },
  {
    method: "GET",
    path: "/live",
    operationId: "listLive",
    summary: "The live actors' roots streaming to this server (runs and any XState app)",
    responses: { 200: "an array of `{rootId, runId?, status, …}`" },
    answer: async ({ api }) => ok(api.live.list()),
  },
  {
    method: "GET",
    path: "/live/{rootId}/graph",
    operationId: "liveGraph",
    summary: "A live root's machine as a laid-out chart",
    responses: { 200: "`{pipeline, layouts}`" },
    answer: async ({ api, params }) => {
      const id = params.rootId ?? "";
      const definition = api.live.definitionOf(id);
      if (!definition)
        return err(new StagechartError("Session/ActorNotFound", `no live actor ${id}`, { id }));
      return ok(await liveGraphOf(definition));
    },
  },
  {
    method: "GET",
    path: "/compare/{runA}/{runB}",
    operationId: "compareRuns",
    summary: "Two stored runs of one pipeline: where their paths part, each stage's cost (b − a)",
    responses: { 200: "the runs' diff" },
    answer: async ({ api, params }) => {
      const a = await runOf(api, params.runA ?? "");
      if (!a.ok) return a;
      return compareStoredRuns(a.value.store, params.runA ?? "", params.runB ?? "");
    },
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
        description: `at most this many (default ${RUN_LIST_LIMIT}, at most 1000)`,
        schema: { type: "integer", minimum: 1, maximum: 1000 },
      },
    ],
    responses: { 200: "an array of `{runId, pipelineId, status, createdAt, updatedAt}`" },
    answer: async ({ api, request }) => {
      const store = await api.store();
      const limit = Number(request.query.get("limit") ?? RUN_LIST_LIMIT);
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
    method: "GET",
    path: "/runs/{runId}",
    operationId: "showRun",
    summary: "A run: its record, status, stages, what it waits for, its audit timeline",
    responses: { 200: "the run" },
    answer: async ({ api, params }) => {
      const run = await runOf(api, params.runId ?? "");
      return run.ok ? describeStoredRun(run.value.store, params.runId ?? "") : run;
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
      const run = await runOf(api, runId);
      return run.ok ? ok(await run.value.store.auditOf(runId, after)) : run;
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/graph",
    operationId: "runGraph",
    summary: "The run's pipeline as a laid-out chart (its stored definition, compiled)",
    responses: { 200: "`{pipeline, layouts}`" },
    answer: async ({ api, params }) => {
      const run = await runOf(api, params.runId ?? "");
      return run.ok ? runGraphOf(run.value.store, run.value.run) : run;
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/steps",
    operationId: "runSteps",
    summary: "The run's committed steps: each one's number, last audit seq and time",
    responses: { 200: "an array of `{step, lastSeq, at}`" },
    answer: async ({ api, params }) => {
      const run = await runOf(api, params.runId ?? "");
      return run.ok ? ok(await run.value.store.stepsOf(params.runId ?? "")) : run;
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/steps/{step}",
    operationId: "runStep",
    summary: "The run as it was after a step: its chart state and context",
    responses: { 200: "`{step, lastSeq, at, state, context}`" },
    answer: async ({ api, params }) => {
      const [runId, step] = [params.runId ?? "", params.step ?? ""];
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      const view = await stepView(run.value.store, runId, Number(step));
      if (view) return ok(view);
      return err(
        new StagechartError("Session/StepNotFound", `run ${runId} has no step ${step}`, {
          runId,
          step,
        }),
      );
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/grants",
    operationId: "liveGrants",
    summary: "The grant requests the run's live process asks this server's pages now",
    responses: { 200: "an array of pending grant requests" },
    answer: async ({ api, params }) => {
      const run = await runOf(api, params.runId ?? "");
      return run.ok ? ok(api.live.pendingOf(params.runId ?? "")) : run;
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/grants/{proposalId}",
    operationId: "showGrant",
    summary: "A grant request the run waits for, with what approving it would allow",
    responses: { 200: "the grant request" },
    answer: async ({ api, params }) => {
      const run = await runOf(api, params.runId ?? "");
      if (!run.ok) return run;
      return grantViewOf(run.value.store, api.live, params.runId ?? "", params.proposalId ?? "");
    },
  },
  {
    method: "POST",
    path: "/runs/{runId}/grants/{proposalId}",
    operationId: "answerGrant",
    summary: "Approve or deny a grant request the run waits for",
    description:
      "Given to the live process that asks, or, where the server resumes runs, to the suspended run that waits for it, which resumes here.",
    body: grantBody,
    headers: [CLIENT_HEADER],
    responses: { 200: "`{answered: live | resumed}`" },
    answer: async ({ api, params, request, body }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      const { decision } = body as z.infer<typeof grantBody>;
      return answerGrant(actingFor(api, request), runId, params.proposalId ?? "", decision);
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/asks",
    operationId: "liveAsks",
    summary: "The ask stages' questions the run's live process asks this server's pages now",
    responses: { 200: "an array of questions" },
    answer: async ({ api, params }) => {
      const run = await runOf(api, params.runId ?? "");
      return run.ok ? ok(api.live.asks.pendingOf(params.runId ?? "")) : run;
    },
  },
  {
    method: "POST",
    path: "/runs/{runId}/asks/{stageExecutionId}",
    operationId: "answerAsk",
    summary: "Answer an ask stage the run waits for (checked against the stage's schema)",
    body: askBody,
    headers: [CLIENT_HEADER],
    responses: { 200: "`{answered: live | resumed}`" },
    answer: async ({ api, params, request, body }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      const { value } = body as z.infer<typeof askBody>;
      return answerAsk(actingFor(api, request), runId, params.stageExecutionId ?? "", value);
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/transcripts/{stageExecutionId}",
    operationId: "stageTranscript",
    summary: "A stage execution's transcript (its model turns and tool calls)",
    responses: { 200: "the transcript's entries" },
    answer: async ({ api, params, request }) => {
      const [runId, key] = [params.runId ?? "", params.stageExecutionId ?? ""];
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      if (runIdOfExecution(key) !== runId) return err(routeNotFound(request));
      return ok(await run.value.store.read(key));
    },
  },
  {
    method: "GET",
    path: "/runs/{runId}/journal/{key}",
    operationId: "journalEntry",
    summary: "A journal entry of the run (a model reply or tool result, by its idempotency key)",
    responses: { 200: "the entry, or null" },
    answer: async ({ api, params, request }) => {
      const [runId, key] = [params.runId ?? "", params.key ?? ""];
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      if (runIdOfJournalKey(key) !== runId) return err(routeNotFound(request));
      return ok((await run.value.store.get(key, z.unknown())) ?? null);
    },
  },
  {
    method: "POST",
    path: "/runs/{runId}/fork",
    operationId: "forkRun",
    summary: "Fork the run at a step into a new run, started here (`stagechart fork`)",
    description:
      "Only a server that runs runs forks (`health.startsRuns`); another refuses with `Session/ForkNotServed` (409).",
    body: forkBody,
    responses: { 200: "`{runId, from: {runId, step}, outcome: started}`" },
    answer: async ({ api, params, body }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      return forkFromPage(api.fork, runId, body as PageFork);
    },
  },
  controlRoute("cancel", cancelBody, "Cancel the run", ({ reason }, by) => ({
    type: "CANCEL",
    reason: reason ?? `cancelled by ${by}`,
  })),
  controlRoute("override", overrideBody, "Send the run to another stage", ({ to, reason }) => ({
    type: "OVERRIDE",
    to,
    reason,
  })),
  controlRoute("redo", redoBody, "Run a stage of the run again", ({ stage }) => ({
    type: "REDO",
    stage,
  })),
];

function controlRoute<Body extends z.ZodMiniType>(
  name: string,
  body: Body,
  summary: string,
  eventOf: (body: z.infer<Body>, by: string) => PipelineEvent,
): Route {
  return {
    method: "POST",
    path: `/runs/{runId}/${name}`,
    operationId: `${name}Run`,
    summary,
    description:
      "Through the one control path (`RunControl`): a queued run is cancelled in place, a live run's owner is asked through the store, a run nobody owns is resumed here with it (where the server resumes runs).",
    body,
    headers: [CLIENT_HEADER],
    responses: { 200: "`{runId, control, outcome: applied | cancelled | resumed, requestId?}`" },
    answer: async ({ api, params, request, body: given }) => {
      const runId = params.runId ?? "";
      const run = await runOf(api, runId);
      if (!run.ok) return run;
      const by = clientOf(request);
      const control = await api.control(by);
      if (!control)
        return err(new StagechartError("Session/RunNotFound", `no run ${runId}`, { runId }));
      return controlRun(control, runId, eventOf(given as z.infer<Body>, by));
    },
  };
}
