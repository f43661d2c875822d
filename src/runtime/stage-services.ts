import type {
  AssertInput,
  SetupInput,
  SetupOutput,
  StageServices,
} from "../compiler/stage-services-port.js";
import type { ProposedCall, StageContext, ToolRun } from "../compiler/stage-types.js";
import { compileSchema, describeSchemaErrors } from "../definitions/json-schema.js";
import { templateStageOf } from "../definitions/stage.js";
import { renderTemplate } from "../definitions/template.js";
import { isStagechartError, StagechartError } from "../errors.js";
import { missingToolCalling } from "../models/capabilities.js";
import type { JsonValue } from "../tools/index.js";
import { elapsedMs, type Host } from "./host.js";
import { invokeHostTool } from "./host-tools.js";
import { askInteractors, grantAnswerers } from "./interactors.js";
import { TOOL_RUN, toolCallKey } from "./journal.js";
import { callModel } from "./model-turn.js";
import { findMatchingRule } from "./rules.js";
import { runAssert, runExit } from "./stage-hooks.js";

/**
 * The host each run's work is done with, by run id: what a run writes (audit, journal,
 * transcripts, memory) and what it counts (budget, reply pieces, spans) are its own, while one
 * compiled machine serves every run of a pipeline on a host (`run-machine.ts`).
 */
export type HostOf = (runId: string) => Host;

/**
 * The stage lifecycle's services, bound to a host: what every run shares comes from `host`,
 * what is a run's own from `hostOf` (the same host, for a machine that serves one run).
 */
export function createStageServices(host: Host, hostOf: HostOf = () => host): StageServices {
  return {
    setup: async (input) => setupStage(host, input),
    init: async ({ stage, stageContext }) => {
      const rendered = renderTemplate(stage.template, {
        // `{{ctx.override.*}}` is empty in a stage execution no override entered.
        ctx: stageContext.override ? stageContext : { ...stageContext, override: NO_OVERRIDE },
        stage: templateStageOf(stage),
      });
      if (!rendered.ok) throw rendered.error;
      return rendered.value;
    },
    checkGate: async ({ stage, stageContext }) =>
      (await host.hooks[stage.id]?.gate?.({ stage, ctx: stageContext, root: host.root })) ??
      "proceed",
    callModel: (input, signal) => callModel(hostOf(input.runId), input, signal),
    grantPolicy: (request) => host.grantPolicy(request),
    hasInteractors: () => grantAnswerers(host.interactors).length > 0,
    unansweredGrants: host.unansweredGrants,
    ...(host.grantTimeout && { grantTimeout: host.grantTimeout }),
    askInteractors: (request, signal) => askInteractors(host.interactors, request, signal),
    isKnownTool: (name) => host.tools.has(name),
    deniedByGuard: guardRuleOf(host),
    runTool: async ({ runId, call }, signal) => {
      const host = hostOf(runId);
      const key = toolCallKey(runId, call.proposalId);
      const recorded = host.journal.get(key, TOOL_RUN);
      if (recorded) return recorded;
      if (host.journal.durable) await host.journal.durable();
      const tool = host.tools.get(call.tool);
      if (!tool)
        throw new StagechartError(
          "ToolTerminal/UnknownTool",
          `there is no tool named "${call.tool}"`,
        );
      const started = host.clock.now();
      const outcome = await invokeHostTool(host, tool, call.args, signal);
      const durationMs = elapsedMs(host, started);
      const run: ToolRun = outcome.ok
        ? { ok: true, result: outcome.output, durationMs }
        : {
            ok: false,
            result: outcome.error.toModelView() as unknown as JsonValue,
            code: outcome.error.code,
            durationMs,
          };
      if (!signal.aborted) host.journal.record(key, run);
      return run;
    },
    assert: (input) =>
      runAssert(host.hooks[input.stage.id], transcriptsOf(input), input, host.root),
    exit: (input) => runExit(host.hooks[input.stage.id], transcriptsOf(input), input, host.root),
    writeTranscript: (runId, stageExecutionId, key, entry) =>
      hostOf(runId).transcripts.put(stageExecutionId, key, entry),
    audit: (event) => hostOf(event.runId).audit.emit(event),
    now: () => host.clock.now(),
    ...(host.stageSlots && { slots: host.stageSlots }),
    providerRetries: {
      max: host.limits.providerRetries,
      delayMs: (failures, error) =>
        Math.max(host.limits.providerRetryDelayMs * 2 ** (failures - 1), retryAfterOf(error)),
    },
  };

  function transcriptsOf({ stageContext }: AssertInput) {
    return hostOf(stageContext.workflowRunId).transcripts;
  }
}

/**
 * The guard rule that denies a call, if one does. The stage machine asks twice about a call the
 * guards deny (to route it, then to say why): the answer for the last call asked about is kept,
 * so the rules are matched once a call.
 */
function guardRuleOf(host: Host): (call: ProposedCall) => string | undefined {
  let last: { call: ProposedCall; rule: string | undefined } | undefined;
  return (call) => {
    if (last?.call !== call)
      last = { call, rule: findMatchingRule(host.guards, call.tool, call.argsSummary)?.source };
    return last.rule;
  };
}

const NO_OVERRIDE = Object.freeze({ reason: "", from: "" });

/** Setup: narrow the tools, check the model and the inputs, build ctx. */
function setupStage(
  host: Host,
  { stage, runId, stageExecutionId, ctx, upstream, stagesBefore, override }: SetupInput,
): SetupOutput {
  if (!host.model.capabilities.toolCalling) throw missingToolCalling(host.model.model);
  const missing = stage.allowedTools.filter((name) => !host.tools.has(name));
  if (missing.length > 0) {
    throw new StagechartError(
      "Validation/UnknownTool",
      `stage ${stage.id} allows ${missing.join(", ")}, which the host does not have (it has ${[...host.tools.keys()].join(", ")})`,
      { stageId: stage.id, missing },
    );
  }
  if (host.tools.has(stage.completionTool)) {
    throw new StagechartError(
      "Validation/CompletionToolCollision",
      `stage ${stage.id}'s completion tool "${stage.completionTool}" has the name of a registered tool`,
      { stageId: stage.id, completionTool: stage.completionTool },
    );
  }
  if (stage.inputsSchema) {
    const validate = compileSchema(stage.inputsSchema);
    if (!validate.ok)
      throw new StagechartError(
        "Validation/StageInputsSchemaInvalid",
        "inputsSchema does not compile",
      );
    upstream.forEach((result, index) => {
      if (!validate.value(result)) {
        const errors = describeSchemaErrors(validate.value.errors);
        throw new StagechartError(
          "Validation/StageInputsInvalid",
          `ctx.upstream[${index}] (from ${result.stageId}) does not match ${stage.id}'s inputsSchema: ${errors.join("; ")}`,
          { stageId: stage.id, index, from: result.stageId, errors },
        );
      }
    });
  }
  // ctx, then the engine's fields set on the copy: the same keys in the same order as a literal
  // spreading ctx, but in V8 a literal that opens with a spread and goes on gets a hidden class of
  // its own, which freezing then copies again.
  const stageContext: Record<string, unknown> = { ...ctx };
  stageContext.upstream = Object.freeze([...upstream]);
  stageContext.workflowRunId = runId;
  stageContext.stageExecutionId = stageExecutionId;
  stageContext.stagesBefore = stagesBefore ?? 0;
  if (override) stageContext.override = override;
  return {
    stageContext: Object.freeze(stageContext) as StageContext,
    envelope: [...stage.allowedTools],
  };
}

/** The longest `retry-after` a provider can impose on a stage; a longer one is cut to this. */
const MAX_RETRY_AFTER_MS = 120_000;

/** How long the provider asked us to wait (its `retry-after`), within reason. */
function retryAfterOf(error: unknown): number {
  const asked = isStagechartError(error) ? Number(error.context.retryAfterMs) : Number.NaN;
  return Number.isFinite(asked) && asked > 0 ? Math.min(asked, MAX_RETRY_AFTER_MS) : 0;
}
