import { describe, expect, it } from "vitest";
import type { Condition, Rule } from "../../src/definitions/pipeline-types.js";
import { resultFor, stageOutcomes } from "../../src/testing/outcomes.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

/** review (submit_review: approved boolean, summary, findings of severity blocker|major|minor|nit) routed by `rules`. */
const reviewRoutedBy = (rules: Rule[], hooks = {}) =>
  pipelineOf({
    stages: [llm("review"), llm("execute")],
    next: { review: { kind: "rules", rules } },
    hooks,
  });
const names = (pipeline: ReturnType<typeof reviewRoutedBy>, stage = "review") =>
  stageOutcomes(pipeline, stage).outcomes.map((o) => o.name);
const payloadsOf = (pipeline: ReturnType<typeof reviewRoutedBy>) =>
  stageOutcomes(pipeline, "review").outcomes.flatMap((o) =>
    o.drive.kind === "complete" ? [o.drive.payload] : [],
  );
const when = (condition: Condition): Rule[] => [{ when: condition, to: "done" }, { to: "execute" }];

describe("the outcomes of an LLM stage", () => {
  it("split an equals condition into a payload that satisfies it and one that falsifies it", () => {
    const pipeline = reviewRoutedBy(when({ path: "output.approved", op: "equals", value: true }));
    expect(names(pipeline)).toEqual([
      "ok: output.approved equals true",
      "ok: not output.approved equals true",
      "cap-hit",
      "inputs-refused",
      "grant-suspended",
    ]);
    expect(payloadsOf(pipeline).map((p) => p.approved)).toEqual([true, false]);
  });

  it("split comparisons, in and exists, each payload valid under the completionSchema", () => {
    for (const condition of [
      { path: "output.summary", op: "notEquals", value: "fine" },
      { path: "parsed.summary", op: "in", value: ["a", "b"] },
      { path: "output.summary", op: "gte", value: "m" },
    ] as Condition[]) {
      const payloads = payloadsOf(reviewRoutedBy(when(condition)));
      expect(payloads).toHaveLength(2);
      for (const payload of payloads) {
        expect(typeof payload.approved).toBe("boolean");
        expect(Array.isArray(payload.findings)).toBe(true);
      }
    }
  });

  it("split exists, where a required field can only exist", () => {
    const { outcomes, unsatisfiable } = stageOutcomes(
      reviewRoutedBy(when({ path: "output.findings", op: "exists", value: true })),
      "review",
    );
    expect(outcomes[0]?.name).toBe("ok: output.findings exists");
    expect(unsatisfiable.map((u) => u.name)).toEqual(["ok: not output.findings exists"]);
  });

  it("combine the conditions of all, any and not: every truth assignment of their atoms", () => {
    const pipeline = reviewRoutedBy(
      when({
        any: [
          { path: "output.approved", op: "equals", value: true },
          { not: { path: "output.summary", op: "equals", value: "ship it" } },
        ],
      }),
    );
    expect(names(pipeline).filter((n) => n.startsWith("ok"))).toEqual([
      'ok: output.approved equals true, output.summary equals "ship it"',
      'ok: output.approved equals true, not output.summary equals "ship it"',
      'ok: not output.approved equals true, output.summary equals "ship it"',
      'ok: not output.approved equals true, not output.summary equals "ship it"',
    ]);
  });

  it("report a condition the completionSchema rules out as unsatisfiable, with the reason", () => {
    const { outcomes, unsatisfiable } = stageOutcomes(
      reviewRoutedBy(when({ path: "output.approved", op: "equals", value: "yes" })),
      "review",
    );
    expect(outcomes.map((o) => o.name)).toContain('ok: not output.approved equals "yes"');
    expect(unsatisfiable).toEqual([
      {
        stage: "review",
        name: 'ok: output.approved equals "yes"',
        reason: 'no payload the completionSchema accepts makes output.approved equals "yes"',
      },
    ]);
  });

  it("report an outcome whose payload the stage's refuseCompletion hook refuses even when called again with it as unsatisfiable, with the refusal", () => {
    const approvedOnly = (parsed: unknown) =>
      (parsed as { approved?: boolean }).approved ? undefined : "only an approval ends this review";
    const { outcomes, unsatisfiable } = stageOutcomes(
      reviewRoutedBy(when({ path: "output.approved", op: "equals", value: true }), {
        review: { refuseCompletion: ({ parsed }: { parsed: unknown }) => approvedOnly(parsed) },
      }),
      "review",
    );
    expect(outcomes.map((o) => o.name)).toContain("ok: output.approved equals true");
    expect(unsatisfiable).toEqual([
      {
        stage: "review",
        name: "ok: not output.approved equals true",
        reason: expect.stringMatching(
          /^the stage's refuseCompletion hook refuses \{.*"approved":false.*\}, and again when it is called with it once more: only an approval ends this review$/,
        ),
      },
    ]);
  });

  it("keep an outcome whose payload the refuseCompletion hook accepts when called again with it (a two-step confirmation)", () => {
    const confirmed = ({ transcript }: { transcript: readonly { role: string }[] }) =>
      transcript.some((entry) => entry.role === "tool") ? undefined : "call again to confirm";
    const pipeline = reviewRoutedBy(when({ path: "output.approved", op: "equals", value: true }), {
      review: { refuseCompletion: confirmed },
    });
    expect(stageOutcomes(pipeline, "review").unsatisfiable).toEqual([]);
  });

  it("read output.* conditions on what the stage hands on: a field its YAML output: leaves out never holds", () => {
    const pipeline = pipelineOf({
      stages: [{ ...llm("review"), outputFields: ["summary"] } as never, llm("execute")],
      next: {
        review: {
          kind: "rules",
          rules: when({ path: "output.approved", op: "equals", value: true }),
        },
      },
    });
    const { outcomes, unsatisfiable } = stageOutcomes(pipeline, "review");
    expect(unsatisfiable.map((u) => u.name)).toEqual(["ok: output.approved equals true"]);
    const ok = outcomes.find((o) => o.name === "ok: not output.approved equals true");
    expect(ok && resultFor(ok).output).toEqual({ summary: expect.any(String) });
  });

  it("leave visits and ctx conditions to the run: no split, one ok", () => {
    const pipeline = reviewRoutedBy(when({ visits: "review", op: "lt", value: 3 }));
    expect(names(pipeline)).toEqual(["ok", "cap-hit", "inputs-refused", "grant-suspended"]);
  });

  it("fail before any model call (inputs-refused) only where the stage has an inputsSchema or its prompt reads an upstream result", () => {
    const pipeline = pipelineOf({ stages: [llm("plan"), llm("review")], next: { plan: "review" } });
    expect(names(pipeline)).toContain("inputs-refused");
    expect(names(pipeline, "plan")).not.toContain("inputs-refused");
  });

  it("fail by retries exhausted when the stage has several attempts", () => {
    const pipeline = pipelineOf({ stages: [llm("execute")] });
    const exhausted = stageOutcomes(pipeline, "execute").outcomes.find((o) => o.verdict === "fail");
    expect(exhausted).toMatchObject({
      name: "retries-exhausted",
      capHit: true,
      drive: { kind: "cap-hit", attempts: 2, turnCap: 40 },
    });
  });

  it("answer a gate with defer and block, as each resolutionPolicy resolves them", () => {
    const gated = (policy: string) =>
      pipelineOf({
        stages: [
          {
            kind: "llm",
            id: "review",
            definition: {
              ...stageOutcomesFixture(),
              resolutionPolicy: policy as "skip",
            },
          },
        ],
        hooks: { review: { gate: () => "proceed" as const } },
      });
    const gates = (policy: string) =>
      stageOutcomes(gated(policy), "review")
        .outcomes.filter((o) => o.drive.kind === "gate")
        .map((o) => [o.name, o.verdict, o.suspends ?? false]);
    expect(gates("retry-later")).toEqual([
      ["gate-defer", "fail", true],
      ["gate-block", "fail", false],
    ]);
    expect(gates("skip")).toEqual([
      ["gate-defer", "skip", false],
      ["gate-block", "skip", false],
    ]);
    expect(gates("fail")).toEqual([
      ["gate-defer", "fail", false],
      ["gate-block", "fail", false],
    ]);
  });
});

describe("the outcomes of a code stage", () => {
  it("are ok and fail, driven by the code itself", () => {
    const pipeline = pipelineOf({ stages: [code("check", () => ({ verdict: "ok" }))] });
    expect(stageOutcomes(pipeline, "check").outcomes.map((o) => [o.name, o.drive.kind])).toEqual([
      ["ok", "code"],
      ["fail", "code"],
    ]);
  });
});

describe("the outcomes of a stage whose code computes its output", () => {
  const routed = (stage: ReturnType<typeof code>) =>
    pipelineOf({
      stages: [stage],
      next: {
        [stage.id]: {
          kind: "rules",
          rules: [
            { when: { path: "output.next", op: "equals", value: "done" }, to: "done" },
            { to: "fail" },
          ],
        },
      },
      ...(stage.kind === "llm" && {
        hooks: { [stage.id]: { exit: () => ({ next: "somewhere" }) } },
      }),
    });

  it("splits a code stage's ok on the output its rules read, any object that makes them hold, and names the split the real output is fitted to", () => {
    const { outcomes } = stageOutcomes(routed(code("check", () => ({ verdict: "ok" }))), "check");
    const condition = { path: "output.next", op: "equals", value: "done" };
    expect(outcomes.map((o) => [o.name, o.verdict, o.drive])).toEqual([
      [
        'ok: output.next equals "done"',
        "ok",
        {
          kind: "code",
          output: expect.objectContaining({ next: "done" }),
          onOutput: [{ condition, holds: true }],
        },
      ],
      [
        'ok: not output.next equals "done"',
        "ok",
        {
          kind: "code",
          output: expect.not.objectContaining({ next: "done" }),
          onOutput: [{ condition, holds: false }],
        },
      ],
      ["fail", "fail", { kind: "code" }],
    ]);
  });

  it("splits an LLM stage's ok on what its exit hook hands on, not on its completionSchema, which says nothing of next", () => {
    const { outcomes, unsatisfiable } = stageOutcomes(routed(llm("review")), "review");
    expect(unsatisfiable).toEqual([]);
    const completions = outcomes.flatMap((o) =>
      o.drive.kind === "complete" ? [[o.name, o.drive.output, o.drive.stubsExit]] : [],
    );
    expect(completions).toEqual([
      ['ok: output.next equals "done"', expect.objectContaining({ next: "done" }), true],
      ['ok: not output.next equals "done"', expect.not.objectContaining({ next: "done" }), true],
    ]);
  });
});

function stageOutcomesFixture() {
  const stage = llm("review");
  if (stage.kind !== "llm") throw new Error("review is an LLM stage");
  return stage.definition;
}
