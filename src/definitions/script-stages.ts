import { closestName } from "./closest-name.js";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  type DiagnosticCode,
  diagnostic,
  type Position,
  type Severity,
  START,
} from "./diagnostics.js";
import type { PipelineDefinition, PipelineStage } from "./pipeline-types.js";
import type { DataPath } from "./yaml-positions.js";

/**
 * What checking a scripted model's file against a pipeline needs of it: the keys of its
 * `stages` (a stage id, or `pipelineId/stageId`) and of its `answers` (ask stage ids).
 */
export interface ScriptKeys {
  file: string;
  stages: ReadonlyMap<string, unknown>;
  answers?: ReadonlyMap<string, unknown>;
  /** Where a key sits in the file (`["stages", "plan"]`); the file's start when not known. */
  locate?: (path: DataPath) => Position;
}

/** One mismatch between a script's keys and a pipeline's stages. */
export interface ScriptStageProblem {
  /** The script's section and key it is about; the section alone for a stage the script lacks. */
  path: DataPath;
  code: DiagnosticCode;
  severity: Severity;
  message: string;
}

/** A stage of the pipeline or of one of its sub-pipelines, with the pipeline it belongs to. */
interface PlacedStage {
  pipelineId: string;
  stage: PipelineStage;
}

/**
 * The keys of a script that name no stage the model is asked about (an error: a misspelt key is
 * never read, so that stage's calls find nothing), and the pipeline's model stages the script
 * has no entries for (a warning: a script may stop short of stages its run never reaches). A
 * key is a stage id of the pipeline or of any sub-pipeline, or `pipelineId/stageId`; an answers
 * key is the id of an ask stage.
 */
export function scriptStageProblems(
  script: ScriptKeys,
  pipeline: PipelineDefinition,
): ScriptStageProblem[] {
  const stages = placedStages(pipeline);
  const where = hasSubPipelines(pipeline)
    ? `pipeline ${pipeline.id} or its sub-pipelines`
    : `pipeline ${pipeline.id}`;
  const models = stages.filter(({ stage }) => stage.kind === "llm");
  const modelKeys = models.flatMap(({ pipelineId, stage }) => [
    stage.id,
    `${pipelineId}/${stage.id}`,
  ]);
  const problems: ScriptStageProblem[] = [];
  const unknown = (path: DataPath, message: string) =>
    problems.push({ path, code: DIAGNOSTIC_CODES.scriptStageUnknown, severity: "error", message });

  for (const key of script.stages.keys()) {
    const named = stagesNamed(stages, key);
    if (named.some(({ stage }) => stage.kind === "llm")) continue;
    const path = ["stages", key];
    if (named.length > 0) {
      const { stage } = named[0] as PlacedStage;
      unknown(
        path,
        `script stage ${key} is ${kindOf(stage)} of ${where}: it calls no model, so its entries would never be read`,
      );
      continue;
    }
    const candidates = key.includes("/") ? modelKeys : models.map(({ stage }) => stage.id);
    unknown(path, `script stage ${key} is not a stage of ${where}; ${hint(key, candidates)}`);
  }

  const asks = stages.filter(({ stage }) => stage.kind === "ask").map(({ stage }) => stage.id);
  for (const key of script.answers?.keys() ?? []) {
    const path = ["answers", key];
    if (asks.includes(key)) continue;
    const named = stagesNamed(stages, key);
    if (named.some(({ stage }) => stage.kind === "ask")) {
      unknown(
        path,
        `answers key ${key}: an answer is found by the ask stage's id alone; write ${key.slice(key.indexOf("/") + 1)}`,
      );
    } else if (named.length > 0) {
      const { stage } = named[0] as PlacedStage;
      unknown(
        path,
        `answers key ${key} is ${kindOf(stage)} of ${where}; answers are for ask stages${stage.kind === "llm" ? " (model replies go under stages)" : ""}`,
      );
    } else {
      const of = asks.length > 0 ? hint(key, asks, "ask stages") : `${where} has no ask stage`;
      unknown(path, `answers key ${key} is not an ask stage of ${where}; ${of}`);
    }
  }

  const missing = models.flatMap(({ pipelineId, stage }) =>
    script.stages.has(stage.id) || script.stages.has(`${pipelineId}/${stage.id}`)
      ? []
      : [pipelineId === pipeline.id ? stage.id : `${stage.id} (in sub-pipeline ${pipelineId})`],
  );
  if (missing.length > 0) {
    const [what, reach] =
      missing.length === 1 ? ["a model stage", "it"] : ["model stages", "one of them"];
    const names = `${missing.slice(0, -1).join(", ")}${missing.length > 1 ? " and " : ""}${missing.at(-1)}`;
    problems.push({
      path: ["stages"],
      code: DIAGNOSTIC_CODES.scriptStageMissing,
      severity: "warning",
      message: `the script has no entries for ${names}, ${what} of ${pipeline.id}; a run that reaches ${reach} fails there with ${DIAGNOSTIC_CODES.scriptStageMissing}`,
    });
  }
  return problems;
}

/** The problems as diagnostics of the script file, each at the key it is about. */
export function scriptStageDiagnostics(
  script: ScriptKeys,
  pipeline: PipelineDefinition,
): Diagnostic[] {
  return scriptStageProblems(script, pipeline).map((problem) =>
    diagnostic(
      script.file,
      script.locate?.(problem.path) ?? START,
      problem.code,
      problem.message,
      problem.severity,
    ),
  );
}

/** Every stage of the pipeline and of its sub-pipelines (each sub-pipeline once), in order. */
function placedStages(pipeline: PipelineDefinition): PlacedStage[] {
  const seen = new Set<PipelineDefinition>();
  const placed: PlacedStage[] = [];
  const walk = (current: PipelineDefinition) => {
    if (seen.has(current)) return;
    seen.add(current);
    for (const stage of Object.values(current.stages)) {
      placed.push({ pipelineId: current.id, stage });
      if (stage.kind === "pipeline") walk(stage.pipeline);
    }
  };
  walk(pipeline);
  return placed;
}

const hasSubPipelines = (pipeline: PipelineDefinition): boolean =>
  Object.values(pipeline.stages).some((stage) => stage.kind === "pipeline");

/** The stages a key names: `stageId` anywhere, or `pipelineId/stageId`. */
function stagesNamed(stages: readonly PlacedStage[], key: string): PlacedStage[] {
  const slash = key.indexOf("/");
  return slash === -1
    ? stages.filter(({ stage }) => stage.id === key)
    : stages.filter(
        ({ pipelineId, stage }) =>
          pipelineId === key.slice(0, slash) && stage.id === key.slice(slash + 1),
      );
}

/** "did you mean cons?", or the names there are. */
function hint(
  key: string,
  candidates: readonly string[],
  what = "stages that call a model",
): string {
  const near = closestName(key, candidates);
  if (near !== undefined) return `did you mean ${near}?`;
  return candidates.length > 0
    ? `its ${what} are ${[...new Set(candidates)].join(", ")}`
    : `it has no ${what}`;
}

/** "a command stage", "a model stage", "an ask stage". */
const kindOf = (stage: PipelineStage): string =>
  stage.kind === "ask" ? "an ask stage" : `a ${stage.kind === "llm" ? "model" : stage.kind} stage`;
