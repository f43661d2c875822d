import { isRecord } from "./contract.js";
import type {
  OverrideReach,
  PipelineDefinition,
  PipelineStage,
  Transition,
} from "./pipeline-types.js";
import type { StageDefinition } from "./stage.js";
import { descriptionOf } from "./stage-descriptions.js";

/**
 * What a pipeline's chart is drawn from, as plain data a run stores when it starts: its stages
 * (id, kind, description, a sub-pipeline's own outline) and its transitions. No prompt, stage
 * body, schema, command, code or ctx: it draws the run's chart wherever the run came from (a
 * file, a definition built in code, an app embedding it), without the files it was loaded from.
 */
export interface PipelineOutline {
  id: string;
  description?: string;
  entry: string;
  stages: Record<string, StageOutline>;
  next: Record<string, Transition>;
  override?: OverrideReach;
}

export interface StageOutline {
  kind: PipelineStage["kind"];
  description?: string;
  pipeline?: PipelineOutline;
}

export function outlineOf(pipeline: PipelineDefinition): PipelineOutline {
  const stages = Object.fromEntries(
    Object.values(pipeline.stages).map((stage) => {
      const description = descriptionOf(stage);
      const outline: StageOutline = {
        kind: stage.kind,
        ...(description !== undefined && { description }),
        ...(stage.kind === "pipeline" && { pipeline: outlineOf(stage.pipeline) }),
      };
      return [stage.id, outline];
    }),
  );
  return {
    id: pipeline.id,
    ...(pipeline.description !== undefined && { description: pipeline.description }),
    entry: pipeline.entry,
    stages,
    next: pipeline.next,
    ...(pipeline.override !== undefined && { override: pipeline.override }),
  };
}

/** Whether a stored value has an outline's shape (its transitions are checked as they are drawn). */
export function isPipelineOutline(value: unknown): value is PipelineOutline {
  if (!isRecord(value) || typeof value.id !== "string" || typeof value.entry !== "string")
    return false;
  if (!isRecord(value.stages) || !isRecord(value.next)) return false;
  return Object.values(value.stages).every(
    (stage) =>
      isRecord(stage) &&
      STAGE_KINDS.has(stage.kind as string) &&
      (stage.kind !== "pipeline" || isPipelineOutline(stage.pipeline)),
  );
}

const STAGE_KINDS = new Set<string>(["llm", "pipeline", "command", "code", "ask"]);

/**
 * The outline as a definition to draw, never to run: each stage has its kind and description and
 * nothing a run would need (an LLM stage's definition is its id and description, a code stage
 * refuses to run, a command stage has no command, an ask stage no prompt).
 */
export function drawableDefinition(outline: PipelineOutline): PipelineDefinition {
  const stages = Object.fromEntries(
    Object.entries(outline.stages).map(([id, stage]) => [id, drawableStage(id, stage)]),
  );
  return {
    id: outline.id,
    ...(outline.description !== undefined && { description: outline.description }),
    context: { type: "object" },
    entry: outline.entry,
    stages,
    next: outline.next,
    grants: { approve: [], deny: [] },
    guards: {},
    hooks: {},
    ...(outline.override !== undefined && { override: outline.override }),
  };
}

function drawableStage(id: string, stage: StageOutline): PipelineStage {
  switch (stage.kind) {
    case "llm":
      return {
        kind: "llm",
        id,
        // Drawing reads a stage definition's description only.
        definition: { id, name: id, description: stage.description } as StageDefinition,
      };
    case "pipeline":
      return {
        kind: "pipeline",
        id,
        pipeline: drawableDefinition(stage.pipeline as PipelineOutline),
      };
    case "command":
      return { kind: "command", id, command: "", timeoutMs: 0 };
    case "ask":
      return { kind: "ask", id, prompt: "", schema: {} };
    default:
      return {
        kind: "code",
        id,
        run: () => {
          throw new Error(`stage ${id} is drawn from its outline: it does not run`);
        },
      };
  }
}
