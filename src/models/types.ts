import type { LanguageModelV3 } from "@ai-sdk/provider";
import type { Interactor } from "../compiler/interactor.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { StagechartError } from "../errors.js";
import type { Redactor } from "../secrets/redact.js";

/**
 * The model a host runs stages on: any AI SDK `LanguageModelV3`, plus what stagechart must know
 * about it before the first turn. Stages end through a tool call, so tool calling is required.
 */
export interface ModelHandle {
  model: LanguageModelV3;
  capabilities: ModelCapabilities;
  /**
   * Removes the model's secrets (its API key) from a text, e.g. a provider error message,
   * before it is journaled or audited. Models without secrets leave it out.
   */
  redact?: Redactor;
  /**
   * Who answers ask stages in a person's place when no terminal can: a scripted model's
   * `answers`. Hosted models leave it out.
   */
  interactor?: Interactor;
  /**
   * The model lets go of a call's `abortSignal` when the call settles: no listener left on it and
   * no signal derived from it (`AbortSignal.any`) still listening. Its calls may then be given an
   * earlier call's signal (an `AbortController` less per call). The scripted and replaying models
   * say so; a provider over `fetch` does not (a request keeps its listener until collected).
   */
  releasesSignal?: boolean;
  /**
   * Why the model cannot run `pipeline`, checked before a run starts or resumes: a scripted
   * model's script naming stages the pipeline does not have. Models that can run any pipeline
   * leave it out.
   */
  checkPipeline?: (pipeline: PipelineDefinition) => StagechartError | undefined;
}

export interface ModelCapabilities {
  toolCalling: boolean;
  /**
   * Its replies are read as they stream (`doStream`): each piece of text and of a tool call's
   * arguments reaches the run's watchers as it comes. Absent or false: replies come whole
   * (`doGenerate`).
   */
  streaming?: boolean;
}

/**
 * What stagechart tells a model about the call it is making, under
 * `providerOptions.stagechart`. Real providers ignore it; the scripted model reads it to pick
 * the stage's script, the cassette recorder and player to file the exchange.
 */
export interface StagechartCallInfo {
  /** The run the call belongs to; stage execution ids start with it. */
  runId?: string;
  stageId: string;
  /** The pipeline the stage belongs to, when there is one. */
  pipelineId?: string;
  stageExecutionId: string;
  attempt: number;
  turn: number;
  /**
   * The 0-based index of this model call among all model calls made for this stage id in the
   * run. A resumed run passes it so a scripted model continues where it stopped.
   */
  position?: number;
  /**
   * How long the server may pause mid-reply before the call fails with an `IdleTimeoutError`:
   * the host's `modelIdleTimeoutMs`. The hosted models watch it; models that make no HTTP
   * request have nothing to watch.
   */
  idleTimeoutMs?: number;
}
