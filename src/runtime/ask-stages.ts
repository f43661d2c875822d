import type { AnyActorRef, AnyStateMachine } from "xstate";
import {
  createAskMachine,
  type InputAnswer,
  type InputRequest,
  UNBOUND_ASK_MACHINE,
} from "../compiler/ask-stage.js";
import type { Interactor } from "../compiler/interactor.js";
import type { JsonValue } from "../definitions/contract.js";
import { compileSchema, describeSchemaErrors } from "../definitions/json-schema.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { Host } from "./host.js";
import { firstOf } from "./interactors.js";
import type { HostOf } from "./stage-services.js";
import type { ParkedStage } from "./suspension.js";

/** A person asked this many times in a row without a valid answer: the stage waits for a resume. */
const MAX_TRIES = 3;

/** An answer to an ask stage given from outside (a resume): to the one it names, or the only one waiting. */
export interface ResumeInput extends InputAnswer {
  stageExecutionId?: string;
}

/**
 * The ask-stage machine bound to a host: its audit log and the interactors that take values.
 * A pipeline none of whose stages asks (nor those of the pipelines it runs) never invokes it:
 * it gets one machine that is never bound, rather than one built for each run.
 */
export function askMachineFor(
  host: Host,
  pipeline: PipelineDefinition,
  hostOf: HostOf = () => host,
): AnyStateMachine {
  if (!asksForInput(pipeline)) return UNBOUND_ASK_MACHINE;
  return createAskMachine({
    audit: (event) => hostOf(event.runId).audit.emit(event),
    canAsk: () => askers(host.interactors).length > 0,
    ask: (request, signal) => askPerson(askers(host.interactors), request, signal),
    problems: answerProblems,
    now: () => host.clock.now(),
  });
}

/** Whether a stage of the pipeline, or of a pipeline it runs, asks a person for a value. */
const asksForInput = (pipeline: PipelineDefinition): boolean =>
  Object.values(pipeline.stages).some(
    (stage) => stage.kind === "ask" || (stage.kind === "pipeline" && asksForInput(stage.pipeline)),
  );

const askers = (interactors: readonly Interactor[]) =>
  interactors.filter((interactor) => interactor.askValue !== undefined);

/** Why `value` is not a valid answer (one line per problem), or nothing when it is. */
export function answerProblems(request: InputRequest, value: unknown): string[] | undefined {
  const validate = compileSchema(request.schema);
  if (!validate.ok) return validate.error.map((p) => `the schema does not compile: ${p.message}`);
  return validate.value(value) ? undefined : describeSchemaErrors(validate.value.errors);
}

/** Asks every interactor that takes values; the first answer wins; an invalid one is asked again. */
async function askPerson(
  interactors: readonly Interactor[],
  request: InputRequest,
  signal: AbortSignal,
): Promise<InputAnswer> {
  let problems: string[] | undefined;
  for (let tries = 0; tries < MAX_TRIES; tries += 1) {
    const answer = await firstAnswer(
      interactors,
      { ...request, ...(problems && { problems }) },
      signal,
    );
    problems = answerProblems(request, answer.value);
    if (!problems) return answer;
  }
  throw invalidInput(request, problems ?? []);
}

const firstAnswer = (
  interactors: readonly Interactor[],
  request: InputRequest & { problems?: string[] },
  signal: AbortSignal,
): Promise<InputAnswer> =>
  firstOf(
    interactors,
    async (interactor, both) => ({
      value: (await interactor.askValue?.(request, both)) as JsonValue,
      by: interactor.name,
    }),
    signal,
  );

const invalidInput = (request: Pick<InputRequest, "stageId">, problems: string[]) =>
  new StagechartError(
    "Validation/InputInvalid",
    `the answer to ${request.stageId} does not match its schema: ${problems.join("; ")}`,
    { stageId: request.stageId, problems },
  );

/**
 * Which waiting ask stage each answer goes to, every answer checked against its stage's schema
 * first: an answer nobody waits for is `Session/NoPendingInput`, one without a stage while several
 * wait `Session/InputAmbiguous`, an invalid one `Validation/InputInvalid`. Nothing is sent on a refusal.
 */
export function routeInputs(
  runId: string,
  inputs: readonly ResumeInput[],
  waiting: readonly ParkedStage[],
): Result<{ actor: AnyActorRef; answer: InputAnswer }[]> {
  const asks = waiting.flatMap(({ actor, wait }) =>
    wait.kind === "ask" ? [{ actor, request: wait.request }] : [],
  );
  const pending = asks.map(({ request }) => request.stageExecutionId);
  const routed: { actor: AnyActorRef; answer: InputAnswer }[] = [];
  for (const { stageExecutionId, ...answer } of inputs) {
    const matching = asks.filter(
      ({ request }) =>
        stageExecutionId === undefined || request.stageExecutionId === stageExecutionId,
    );
    const [target] = matching;
    if (!target)
      return err(
        new StagechartError(
          "Session/NoPendingInput",
          `run ${runId} waits for no answer${stageExecutionId ? ` from ${stageExecutionId}` : ""}${pending.length ? `; it waits for ${pending.join(", ")}` : ""}`,
          { runId, pending },
        ),
      );
    if (matching.length > 1)
      return err(
        new StagechartError(
          "Session/InputAmbiguous",
          `run ${runId} waits for several answers (${pending.join(", ")}); say which stage execution this one is for`,
          { runId, pending },
        ),
      );
    const problems = answerProblems(target.request, answer.value);
    if (problems) return err(invalidInput(target.request, problems));
    routed.push({ actor: target.actor, answer });
  }
  return ok(routed);
}
