import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { toDirectedGraph } from "xstate/graph";
import {
  codegenOutcome,
  planningOutcome,
  planReviewOutcome,
  reviewOutcome,
} from "../../machines/task-lifecycle/artifacts.js";
import { PHASES, recordTransition } from "../../machines/task-lifecycle/phases.js";
import { holds } from "../../src/compiler/conditions.js";
import type { PipelineContext } from "../../src/compiler/pipeline-context.js";
import { compiledPipeline } from "../../src/compiler/pipeline-machine.js";
import { tableOf } from "../../src/compiler/stage-table.js";
import type { TransitionNotice } from "../../src/definitions/contract.js";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { BUNDLED_MACHINES } from "../../src/paths.js";
import { refuseControl } from "../../src/runtime/run-checks.js";

/** The lifecycle's table: every phase's successors, and nothing else. */
const TABLE: Record<string, string[]> = {
  planning: ["plan-review", "planning"],
  "plan-review": ["codegen", "planning"],
  codegen: ["review", "planning", "plan-review", "codegen"],
  review: ["test", "codegen", "planning"],
  test: ["accept", "codegen"],
  accept: ["done", "codegen", "review", "planning", "revert"],
  revert: ["done"],
};
const TARGETS = [...PHASES, "done"];

async function loaded(): Promise<PipelineDefinition> {
  const result = await loadPipelineFile(join(BUNDLED_MACHINES, "task-lifecycle.yaml"));
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  expect(result.warnings).toEqual([]);
  return result.value;
}

/** The answer to accept's question that means going to each phase. */
const DECISION_FOR: Record<string, string> = {
  done: "accepted",
  codegen: "changes-requested",
  review: "needs-review",
  planning: "upstream-problem",
  revert: "revert",
};

/**
 * Where the phase's rules send a run, on its first visit, whose phase output says `next` (accept,
 * a person's answer: the decision that means `next`, or a decision no rule expects).
 */
function ruleTarget(pipeline: PipelineDefinition, from: string, next: string) {
  const transition = pipeline.next[from];
  if (transition?.kind !== "rules") throw new Error(`${from} has no rules`);
  const visits = Object.fromEntries(PHASES.map((p) => [p, 1]));
  const output: Record<string, string> =
    from === "accept" ? { decision: DECISION_FOR[next] ?? next } : { next };
  return transition.rules.find(
    (rule) =>
      !rule.when || holds(rule.when, { verdict: "ok", output, ctx: {}, visits }, pipeline.guards),
  )?.to;
}

/** A run in phase `current` after every phase has run once (so any of them could be redone). */
const at = (current: string): PipelineContext =>
  ({
    current,
    visits: tableOf(Object.fromEntries(PHASES.map((p) => [p, 1]))),
  }) as unknown as PipelineContext;

/**
 * The compiled machine's transitions out of each phase, by event kind: its rules (the edges of
 * its graph), and the OVERRIDE and REDO transitions (taken at the root) whose guards hold for a
 * run at that phase, evaluated with the machine's own guard implementations.
 */
function compiledTargets(pipeline: PipelineDefinition) {
  const machine = compiledPipeline(pipeline);
  const byPhase: Record<string, Record<"rules" | "OVERRIDE" | "REDO", Set<string>>> = {};
  for (const node of toDirectedGraph(machine).children) {
    for (const edge of node.edges) {
      const from = edge.source.id.split(".")[1] as string;
      const to = edge.target.id.split(".")[1] as string;
      byPhase[from] ??= { rules: new Set(), OVERRIDE: new Set(), REDO: new Set() };
      if (to !== "failed") byPhase[from].rules.add(to);
    }
  }
  const guards = machine.implementations.guards as Record<
    string,
    (args: { context: PipelineContext; event: unknown }, params: unknown) => boolean
  >;
  for (const from of PHASES) {
    for (const kind of ["OVERRIDE", "REDO"] as const) {
      for (const transition of machine.root.transitions.get(kind) ?? []) {
        // The last one, unguarded, refuses what no guard allows.
        const guard = transition.guard as { type: string; params: { target: string } } | undefined;
        if (!guard) continue;
        const { target } = guard.params;
        const event =
          kind === "OVERRIDE"
            ? { type: kind, to: target, reason: "r" }
            : { type: kind, stage: target };
        if (guards[guard.type]?.({ context: at(from), event }, guard.params))
          byPhase[from]?.[kind].add(target);
      }
    }
  }
  return byPhase;
}

describe("the task-lifecycle pipeline's transitions", () => {
  for (const from of PHASES) {
    for (const to of TARGETS) {
      const allowed = TABLE[from]?.includes(to) ?? false;
      it(`${from} → ${to} is ${allowed ? "allowed" : "refused"}, by its rules, by override and by redo`, async () => {
        const pipeline = await loaded();
        expect(ruleTarget(pipeline, from, to)).toBe(allowed ? to : undefined);
        const overridden = refuseControl(pipeline, at(from), {
          type: "OVERRIDE",
          to,
          reason: "a reviewer accepts the risk",
        });
        // done is reached only through accept's decision or a revert, never by override.
        const overrides = allowed && to !== "done";
        expect(overridden?.code).toBe(overrides ? undefined : "Session/IllegalTransition");
        // A redo re-runs the phase itself, or goes where the table allows; it skips nothing.
        const redone = refuseControl(pipeline, at(from), { type: "REDO", stage: to });
        const redoes = to !== "done" && (to === from || allowed);
        expect(redone?.code).toBe(redoes ? undefined : "Session/IllegalTransition");
      });
    }
  }

  it("the compiled machine has exactly these transitions: its rules, overrides and redos", async () => {
    const compiled = compiledTargets(await loaded());
    expect(Object.keys(compiled).sort()).toEqual([...PHASES].sort());
    for (const from of PHASES) {
      const table = TABLE[from] as string[];
      const phases = table.filter((to) => to !== "done");
      expect([...(compiled[from]?.rules ?? [])].sort(), from).toEqual([...table].sort());
      expect([...(compiled[from]?.OVERRIDE ?? [])].sort(), from).toEqual([...phases].sort());
      expect([...(compiled[from]?.REDO ?? [])].sort(), from).toEqual(
        [...new Set([from, ...phases])].sort(),
      );
    }
  });

  it("an override needs a reason", async () => {
    const refused = refuseControl(await loaded(), at("review"), {
      type: "OVERRIDE",
      to: "test",
      reason: " ",
    });
    expect(refused?.code).toBe("Validation/OverrideReasonMissing");
  });
});

function taskDir(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "stagechart-artifacts-"));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, "task", file)), { recursive: true });
    writeFileSync(join(root, "task", file), content);
  }
  return root;
}

const DOC = "# Plan\n\nWrite slugify in src/slug.js.\n";
const PLAN = JSON.stringify({ summary: "s", blockingQuestions: [], files: ["src/slug.js"] });

describe("the artifacts that gate each phase", () => {
  it("planning needs planning.ai.json, the plan document, no blocking question, and a file plan (or files to infer it)", () => {
    expect(planningOutcome(taskDir({}))).toEqual({
      problem: "task/planning/planning.ai.json is missing",
    });
    expect(planningOutcome(taskDir({ "planning/planning.ai.json": "{" }))).toEqual({
      problem: "task/planning/planning.ai.json is not valid JSON",
    });
    const open = JSON.stringify({ summary: "s", blockingQuestions: ["which API?"] });
    expect(
      planningOutcome(
        taskDir({
          "planning/planning.ai.json": open,
          "planning/plan.md": DOC,
          "planning/plan.files.json": '{"files":["a"]}',
        }),
      ),
    ).toMatchObject({ next: "planning", reason: expect.stringContaining("which API?") });
    expect(planningOutcome(taskDir({ "planning/planning.ai.json": PLAN }))).toEqual({
      problem: "task/planning/plan.md is missing or empty",
    });
    expect(
      planningOutcome(taskDir({ "planning/planning.ai.json": PLAN, "planning/plan.md": " \n" })),
    ).toEqual({ problem: "task/planning/plan.md is missing or empty" });
    expect(
      planningOutcome(taskDir({ "planning/planning.ai.json": PLAN, "planning/plan.md": DOC })),
    ).toMatchObject({ next: "plan-review" });
    const noFiles = JSON.stringify({ summary: "s", blockingQuestions: [] });
    expect(
      planningOutcome(taskDir({ "planning/planning.ai.json": noFiles, "planning/plan.md": DOC })),
    ).toMatchObject({ problem: expect.stringContaining("plan.files.json is missing") });
  });

  it("plan-review needs ok and blocked as booleans; only ok and not blocked reaches codegen", () => {
    const review = (body: unknown) =>
      planReviewOutcome(taskDir({ "review/plan-review.json": JSON.stringify(body) }));
    expect(review({ ok: true })).toMatchObject({ problem: expect.stringContaining("malformed") });
    expect(review({ ok: true, blocked: false })).toMatchObject({ next: "codegen" });
    expect(review({ ok: true, blocked: true })).toMatchObject({ next: "planning" });
    expect(review({ ok: false, blocked: false })).toMatchObject({ next: "planning" });
  });

  it("codegen needs the diff and generated files inside the plan; other files go back to planning", () => {
    const files = { "planning/planning.ai.json": PLAN };
    expect(codegenOutcome(taskDir(files), "completed")).toMatchObject({
      problem: "task/code/diff.patch is missing or empty",
    });
    const withDiff = { ...files, "code/diff.patch": "--- a\n+++ b\n" };
    expect(codegenOutcome(taskDir(withDiff), "completed")).toMatchObject({
      problem: "task/code/files/ holds no file",
    });
    const inScope = { ...withDiff, "code/files/src/slug.js": "x" };
    expect(codegenOutcome(taskDir(inScope), "completed")).toMatchObject({ next: "review" });
    const outOfScope = { ...inScope, "code/files/src/other.js": "x" };
    expect(codegenOutcome(taskDir(outOfScope), "completed")).toMatchObject({
      next: "planning",
      reason: expect.stringContaining("src/other.js"),
    });
    expect(codegenOutcome(taskDir({}), "plan-unclear")).toMatchObject({ next: "plan-review" });
    expect(codegenOutcome(taskDir({}), "rerun")).toMatchObject({ next: "codegen" });
  });

  it("review sends blocking code issues to codegen, plan issues to planning, none to test", () => {
    const review = (issues: unknown) =>
      reviewOutcome(taskDir({ "review/code-review.json": JSON.stringify({ issues }) }));
    expect(review([])).toMatchObject({ next: "test" });
    expect(review([{ severity: "minor", area: "code", message: "m" }])).toMatchObject({
      next: "test",
    });
    expect(review([{ severity: "blocking", area: "code", message: "m" }])).toMatchObject({
      next: "codegen",
    });
    expect(review([{ severity: "blocking", area: "plan", message: "m" }])).toMatchObject({
      next: "planning",
    });
    expect(review([{ severity: "fatal" }])).toMatchObject({ problem: expect.any(String) });
  });

  it("accept asks a person for the decision, whose schema allows only the lifecycle's five", async () => {
    const accept = (await loaded()).stages.accept;
    expect(accept?.kind).toBe("ask");
    if (accept?.kind !== "ask") return;
    expect(accept.schema).toMatchObject({
      required: ["decision"],
      properties: {
        decision: { enum: Object.values(DECISION_FOR) },
        reason: { type: "string" },
      },
    });
  });

  it("deciding twice on the same files decides the same (a phase re-run is idempotent)", () => {
    const root = taskDir({ "planning/planning.ai.json": PLAN });
    expect(planningOutcome(root)).toEqual(planningOutcome(root));
  });
});

describe("planning entered again (a re-plan, or a redo of it)", () => {
  const notice = (root: string, planning: number): TransitionNotice => ({
    runId: "r1",
    pipelineId: "task-lifecycle",
    state: "planning",
    previous: "plan-review",
    ctx: { task: "t" },
    visits: { planning, "plan-review": 1 },
    results: {},
    root,
  });
  const read = (root: string, file: string) => readFileSync(join(root, "task", file), "utf8");

  it("keeps the round before's planning artifacts in planning/versions/<round>/ first, once", async () => {
    const root = taskDir({
      "planning/planning.ai.json": PLAN,
      "planning/plan.md": DOC,
      "planning/plan.files.json": '{"files":["src/slug.js"]}',
    });
    await recordTransition(notice(root, 1));
    expect(existsSync(join(root, "task/planning/versions"))).toBe(false);
    await recordTransition(notice(root, 2));
    expect(readdirSync(join(root, "task/planning/versions/1")).sort()).toEqual([
      "plan.files.json",
      "plan.md",
      "planning.ai.json",
    ]);
    expect(read(root, "planning/versions/1/plan.md")).toBe(DOC);
    // Told again (a resume repeats the notice) after the new round began writing: kept as it was.
    writeFileSync(join(root, "task/planning/plan.md"), "# Plan, round 2\n");
    await recordTransition(notice(root, 2));
    expect(read(root, "planning/versions/1/plan.md")).toBe(DOC);
    await recordTransition(notice(root, 3));
    expect(read(root, "planning/versions/2/plan.md")).toBe("# Plan, round 2\n");
    expect(readdirSync(join(root, "task/planning/versions/2"))).not.toContain("versions");
    expect(JSON.parse(read(root, "state.json"))).toMatchObject({
      phase: "planning",
      actors: { planning: { round: 3, status: "running" } },
    });
  });
});

describe("leaving accept", () => {
  const at = (root: string, state: string, output: unknown): TransitionNotice => ({
    runId: "r1",
    pipelineId: "task-lifecycle",
    state,
    ctx: { task: "t" },
    visits: { accept: 1, revert: 1 },
    results: {
      accept: {
        stageId: "accept",
        stageExecutionId: "r1/accept/1",
        verdict: "ok",
        output: output as never,
        capHit: false,
        attemptCount: 1,
      },
    },
    root,
  });
  const decisionIn = (root: string) =>
    JSON.parse(readFileSync(join(root, "task/accept/decision.json"), "utf8"));

  it("records the person's last answer in accept/decision.json, the artifact the lifecycle names", async () => {
    const root = taskDir({});
    const answer = { decision: "revert", reason: "slugify breaks the old callers" };
    await recordTransition(at(root, "revert", answer));
    expect(decisionIn(root)).toEqual(answer);
    // Entered again (a reopening), accept has not decided yet: the file keeps the last decision.
    await recordTransition(at(root, "accept", { decision: "accepted" }));
    expect(decisionIn(root)).toEqual(answer);
    await recordTransition(at(root, "done", { decision: "accepted" }));
    expect(decisionIn(root)).toEqual({ decision: "accepted" });
  });
});
