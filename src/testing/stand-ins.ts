import { stageOfSibling } from "../compiler/pipeline-parallel.js";
import type { CodeStageFunction, CodeStageOutcome, JsonValue } from "../definitions/contract.js";
import type { PipelineDefinition, PipelineStage } from "../definitions/pipeline-types.js";
import { runCommand } from "../runtime/code-stages.js";
import type { StageOutcome } from "./outcomes.js";
import { fitOutput, type Requirement } from "./payloads.js";
import { computesOutput } from "./splits.js";

/**
 * What a code or command stage ends with in a test run instead of running, by stage id: one
 * outcome for every path, or one per outcome a path names for the stage (`{"ok": {…}, "fail":
 * {…}}`; an outcome it leaves out is left to the stage's code). A stage of a sub-pipeline is
 * named by the path of stage ids to it: `sandbox/run-tasks`.
 */
export type Fixtures = Record<string, CodeStageOutcome | Record<string, CodeStageOutcome>>;

/** Whether a stage's fixture gives one outcome per outcome a path names, rather than one for all. */
export const byOutcome = (
  fixture: Fixtures[string] | undefined,
): fixture is Record<string, CodeStageOutcome> =>
  fixture !== undefined && typeof fixture.verdict !== "string";

/** A stage's fixture when it gives one outcome for every path (a per-outcome one is the drive's, visit by visit). */
const oneForAll = (fixture: Fixtures[string] | undefined): CodeStageOutcome | undefined =>
  byOutcome(fixture) ? undefined : fixture;

/** The fixtures of the stages of a sub-pipeline stage's pipeline, named as within it. */
export function fixturesWithin(fixtures: Fixtures, stageId: string): Fixtures {
  const prefix = `${stageId}/`;
  return Object.fromEntries(
    Object.entries(fixtures).flatMap(([key, fixture]) =>
      key.startsWith(prefix) ? [[key.slice(prefix.length), fixture]] : [],
    ),
  );
}

/** The keys of `fixtures` that name no code or command stage of the pipeline or its sub-pipelines. */
export function fixturesNamingNoStage(pipeline: PipelineDefinition, fixtures: Fixtures): string[] {
  const names = (within: PipelineDefinition, key: string): boolean => {
    const [head = "", ...rest] = key.split("/");
    const stage = within.stages[head];
    if (rest.length > 0) return stage?.kind === "pipeline" && names(stage.pipeline, rest.join("/"));
    return stage?.kind === "code" || stage?.kind === "command";
  };
  return Object.keys(fixtures).filter((key) => !names(pipeline, key));
}

/**
 * What a stage execution ends with in place of its code. With `fits`, the real code (a code or
 * command stage's, an exit hook) runs first: when it ends `ok`, what it hands on is kept with
 * only the fields the path's split reads set as the split needs (`fitOutput`), so the stages
 * after it read what the code really hands on; `outcome` is what is handed on where it cannot be.
 */
export interface StandIn {
  outcome: CodeStageOutcome;
  fits?: readonly Requirement[];
}

/**
 * What the real code hands on (`run`'s result), fitted to `fits`; none when it throws or no
 * value of those fields gives the split.
 */
export async function fittedOutput(
  fits: readonly Requirement[],
  run: () => unknown,
): Promise<JsonValue | undefined> {
  let output: unknown;
  try {
    output = await run();
  } catch {
    // Code that cannot run on what the path's stand-ins hand it is stood in for as a whole.
    return undefined;
  }
  const fitted = fitOutput(output, fits);
  return fitted.ok ? (fitted.value as JsonValue) : undefined;
}

/**
 * What stands in for one step's stage execution: its fixture (for this outcome, or for every
 * path), else the code computing an output the path's split reads — an exit hook, or a code or
 * command stage whose rules read its output. Where the split is `ok`, the real code's output
 * is fitted to it (see `StandIn`); a `fail` is the stand-in's alone.
 */
export function standInOf(
  pipeline: PipelineDefinition,
  outcome: StageOutcome,
  fixture: CodeStageOutcome | undefined,
): StandIn | undefined {
  if (fixture) return { outcome: fixture };
  const { drive } = outcome;
  const ok = (output: JsonValue | undefined, fits: readonly Requirement[] | undefined) => ({
    outcome: { verdict: "ok" as const, ...(output !== undefined && { output }) },
    ...(fits && { fits }),
  });
  if (drive.kind === "complete") return drive.stubsExit && ok(drive.output, drive.onOutput);
  if (drive.kind !== "code" || !computesOutput(pipeline, outcome.stage)) return undefined;
  return outcome.verdict === "ok"
    ? ok(drive.output, drive.onOutput)
    : {
        outcome: {
          verdict: outcome.verdict,
          reason: `the path ends ${outcome.stage} ${outcome.verdict}`,
        },
      };
}

/**
 * The stage, in a sub-pipeline as deep as `within` (the stage ids down to it), that a stand-in's
 * key (`sandbox@1/run-tasks@1`) is for; none for a stage at another depth.
 */
function stageAt(key: string, within: readonly string[]): string | undefined {
  const ids = key.split("/").map((segment) => stageOfSibling(segment.split("@")[0] as string));
  if (ids.length !== within.length + 1 || within.some((id, i) => ids[i] !== id)) return undefined;
  return ids.at(-1);
}

/** The stages whose exit hooks or code the stand-ins stand in for, at any depth. */
export const stagesStoodIn = (standIns: ReadonlyMap<string, StandIn>): Set<string> =>
  new Set(
    [...standIns.keys()].map((key) =>
      stageOfSibling(key.split("/").at(-1)?.split("@")[0] as string),
    ),
  );

/**
 * The pipeline, and each sub-pipeline in it, with each code or command stage a stand-in or a
 * fixture is for replaced: by the stand-in for the visit (by `executionKey`) when it has one,
 * else by its code — a code stage's function runs first where the stand-in fits its output, see
 * `StandIn` — or, without any stand-in, by its fixture when it has one for every path.
 */
export function withStandIns(
  pipeline: PipelineDefinition,
  fixtures: Fixtures,
  standIns: ReadonlyMap<string, StandIn>,
  /** The execution key of a stage execution, from its id. */
  keyOf: (stageExecutionId: string) => string,
  within: readonly string[] = [],
): PipelineDefinition {
  const stoodIn = new Set(
    [...standIns.keys()].flatMap((key) => {
      const stage = stageAt(key, within);
      return stage === undefined ? [] : [stage];
    }),
  );
  const standInFor = (stage: Extract<PipelineStage, { kind: "code" | "command" }>) => {
    const real: CodeStageFunction =
      stage.kind === "code" ? stage.run : ({ callTool }) => runCommand(stage, callTool);
    if (stoodIn.has(stage.id))
      return (async (input) => {
        const standIn = standIns.get(keyOf(input.ctx.stageExecutionId));
        if (!standIn) return real(input);
        if (!standIn.fits) return standIn.outcome;
        let ended: CodeStageOutcome | undefined;
        const output = await fittedOutput(standIn.fits, async () => {
          ended = await real(input);
          return ended.verdict === "ok" ? ended.output : undefined;
        });
        return ended && output !== undefined ? { ...ended, output } : standIn.outcome;
      }) satisfies CodeStageFunction;
    const fixture = oneForAll(fixtures[stage.id]);
    return fixture && (() => fixture);
  };
  const stages = Object.fromEntries(
    Object.entries(pipeline.stages).map(([id, stage]): [string, PipelineStage] => {
      if (stage.kind === "pipeline") {
        const inner = fixturesWithin(fixtures, id);
        const sub = withStandIns(stage.pipeline, inner, standIns, keyOf, [...within, id]);
        return [id, { ...stage, pipeline: sub }];
      }
      const run = stage.kind === "code" || stage.kind === "command" ? standInFor(stage) : undefined;
      return [id, run ? { kind: "code", id, run } : stage];
    }),
  );
  return { ...pipeline, stages };
}
