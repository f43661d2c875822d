import type { CodeStageFunction } from "../../src/definitions/contract.js";
import type {
  JoinPolicy,
  PipelineDefinition,
  PipelineStage,
  Transition,
} from "../../src/definitions/pipeline-types.js";
import { loadStage } from "./stage-harness.js";

/** A pipeline IR for tests, with the defaults a loader would fill in. */
export function pipelineOf(
  spec: Omit<Partial<PipelineDefinition>, "stages" | "next"> & {
    stages: PipelineStage[];
    next?: Record<string, Transition | string>;
  },
): PipelineDefinition {
  const stages = Object.fromEntries(spec.stages.map((stage) => [stage.id, stage]));
  const next = Object.fromEntries(
    Object.entries(spec.next ?? {}).map(([from, t]) => [
      from,
      typeof t === "string" ? { kind: "rules" as const, rules: [{ to: t }] } : t,
    ]),
  );
  return {
    id: spec.id ?? "test-pipeline",
    context: spec.context ?? { type: "object", properties: { task: { type: "string" } } },
    entry: spec.entry ?? (spec.stages[0]?.id as string),
    stages,
    next,
    grants: spec.grants ?? { approve: [], deny: [] },
    guards: spec.guards ?? {},
    hooks: spec.hooks ?? {},
    ...(spec.override && { override: spec.override }),
    ...(spec.onTransition && { onTransition: spec.onTransition }),
    ...(spec.budget && { budget: spec.budget }),
  };
}

export const llm = (name: string, edit?: (text: string) => string): PipelineStage => ({
  kind: "llm",
  id: name,
  definition: loadStage(name, edit),
});

export const code = (id: string, run: CodeStageFunction): PipelineStage => ({
  kind: "code",
  id,
  run,
});

/** A code stage that waits `ms` (honouring cancellation), then ends with `verdict`. */
export const waits = (
  id: string,
  ms: number,
  verdict: "ok" | "fail" = "ok",
  onStart?: () => void,
): PipelineStage =>
  code(id, ({ signal }) => {
    onStart?.();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve({ verdict, output: { id } }), ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
    });
  });

/** The scripted replies of the code-review stages, by stage. */
const CODE_REVIEW_REPLIES: Record<string, string> = {
  plan: `  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: "'a'", new: "'b'" }
    - tool: Grep
      args: { pattern: auth }
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`,
  execute: `  execute:
    - tool: Edit
      args: { path: src/auth.ts, old: "export const auth", new: "export const authentication" }
    - tool: submit_diff
      args: { summary: "Renamed auth", files: [{ path: src/auth.ts, change: modified }] }
`,
  review: `  review:
    - tool: submit_review
      args: { approved: true, summary: "Good", findings: [] }
`,
};

/**
 * The code-review replies of `stages` alone: a script naming a stage its pipeline lacks is
 * refused before the run starts.
 */
export const codeReviewScriptOf = (...stages: string[]): string =>
  `\nstages:\n${stages.map((stage) => CODE_REVIEW_REPLIES[stage] ?? "").join("")}`;

export const CODE_REVIEW_SCRIPT = codeReviewScriptOf("plan", "execute", "review");

/**
 * plan, then execute fans out to test and lint under `policy` and they join at review, which goes
 * on by `review` when that is given (and ends the pipeline otherwise).
 */
export const fanOutPipeline = (
  policy: JoinPolicy,
  options: { id?: string; maxConcurrency?: number | undefined; review?: Transition } = {},
): PipelineDefinition => {
  const { id, maxConcurrency, review } = options;
  return pipelineOf({
    ...(id !== undefined && { id }),
    stages: ["plan", "execute", "test", "lint", "review"].map((stage) => llm(stage)),
    next: {
      plan: "execute",
      execute: {
        kind: "parallel",
        siblings: ["test", "lint"],
        join: "review",
        policy,
        ...(maxConcurrency !== undefined && { maxConcurrency }),
      },
      ...(review && { review }),
    },
  });
};
