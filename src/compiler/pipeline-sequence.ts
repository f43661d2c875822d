import type { PipelineDefinition, PipelineStage, Rule } from "../definitions/pipeline-types.js";
import { CANCEL, DONE, FAIL } from "../definitions/pipeline-types.js";
import { mapList } from "./pipeline-map.js";
import {
  actorOf,
  childInput,
  type DoneArgs,
  enteredBy,
  exitActions,
  fail,
  groupState,
  isStage,
  resultOf,
  stateOf,
  transitionAudit,
} from "./pipeline-states.js";
import { viewOf } from "./stage-entries.js";

/** The state of one stage: invoke its child, then follow its transition. */
export function stageState(pipeline: PipelineDefinition, stage: PipelineStage) {
  return {
    entry: { type: "enter", params: { stageId: stage.id } },
    invoke: {
      id: stage.id,
      src: actorOf(stage),
      input: childInput(pipeline, stage, "sequential"),
      onDone: afterStage(pipeline, stage),
      onError: {
        target: "failed",
        description: "crashed",
        actions: fail(({ event }: { event: { error: unknown } }) =>
          viewOf(
            "ExtensionHost/LifecycleFailure",
            `stage ${stage.id} crashed: ${String(event.error)}`,
          ),
        ),
      },
    },
  };
}

/** The transitions after a stage's result: its rules, a fan-out, or the end. */
function afterStage(pipeline: PipelineDefinition, stage: PipelineStage) {
  const stageId = stage.id;
  const record = [
    ...exitActions(stage),
    {
      type: "record",
      params: ({ event }: DoneArgs) => ({
        result: resultOf(event.output),
        entered: enteredBy(event.output),
      }),
    },
  ];
  const transition = pipeline.next[stageId];
  const failure = {
    target: "failed",
    description: "failed",
    actions: [
      ...record,
      transitionAudit(stageId, FAIL, "terminal"),
      fail(({ event }: DoneArgs) => {
        const result = resultOf(event.output);
        return result.verdict === "fail"
          ? viewOf(
              result.error?.code ?? "Validation/StageFailed",
              `stage ${stageId} failed: ${result.reason ?? result.error?.message ?? "no reason given"}`,
              { stageId },
            )
          : viewOf(
              "Validation/PipelineNoRuleMatched",
              `no transition rule of stage ${stageId} matched its result`,
              { stageId },
            );
      }),
    ],
  };
  if (!transition) {
    return [
      {
        guard: {
          type: "succeeded",
          params: ({ event }: DoneArgs) => ({ result: resultOf(event.output) }),
        },
        target: "done",
        description: "ok",
        actions: [...record, transitionAudit(stageId, DONE, "terminal")],
      },
      failure,
    ];
  }
  // A stage that succeeded goes on to its group, audited as `audit` says (the siblings it runs).
  const intoGroup = <Params>(audit: Params) => ({
    guard: {
      type: "succeeded",
      params: ({ event }: DoneArgs) => ({ result: resultOf(event.output) }),
    },
    target: groupState(stageId),
    description: "ok",
    actions: [...record, { type: "audit", params: audit }],
  });
  if (transition.kind === "parallel") {
    const payload = { from: stageId, to: transition.siblings, kind: "parallel" };
    return [intoGroup({ type: "SMTransition", payload }), failure];
  }
  if (transition.kind === "map") {
    return [
      {
        guard: {
          type: "mapRefuses",
          params: ({ event }: DoneArgs) => ({
            result: resultOf(event.output),
            from: stageId,
            group: transition,
          }),
        },
        target: "failed",
        description: "list refused",
        actions: [
          ...record,
          transitionAudit(stageId, FAIL, "terminal"),
          fail(({ event, context }: DoneArgs) => {
            const list = mapList(stageId, transition, resultOf(event.output), context.ctx);
            // The guard took this way only for a refused list.
            return "error" in list
              ? list.error
              : viewOf("Validation/MapOverNotList", `the map group after ${stageId} has no list`);
          }),
        ],
      },
      intoGroup(({ event, context }: DoneArgs) => {
        // How many items the group was entered with: the audit log says what ran.
        const list = mapList(stageId, transition, resultOf(event.output), context.ctx);
        const items = "items" in list ? list.items.length : 0;
        return {
          type: "SMTransition",
          payload: { from: stageId, to: [transition.stage], kind: "map", items },
        };
      }),
      failure,
    ];
  }
  return [
    ...transition.rules.map((rule) => ({
      guard: {
        type: "ruleHolds",
        params: ({ event }: DoneArgs) => ({ rule, result: resultOf(event.output) }),
      },
      target: stateOf(rule.to),
      // A rule back to the same stage (a re-plan, a re-run) must start it again.
      reenter: true,
      description: describeRule(rule, transition.rules.length),
      actions: [
        ...record,
        ...(isStage(rule.to)
          ? [
              {
                type: "handOn",
                params: ({ event }: DoneArgs) => ({ upstream: [resultOf(event.output)] }),
              },
            ]
          : []),
        transitionAudit(stageId, rule.to, isStage(rule.to) ? "sequential" : "terminal"),
        // The stage has ended: cancelling the run has nothing running to cancel.
        ...(rule.to === CANCEL ? [{ type: "leaveStage" }] : []),
        ...(rule.to === FAIL
          ? [
              fail(() =>
                viewOf(
                  "Validation/PipelineFailedByRule",
                  `stage ${stageId}'s rules sent the run to fail`,
                  { stageId },
                ),
              ),
            ]
          : []),
      ],
    })),
    failure,
  ];
}

/** A rule as the graph labels it: `output.approved equals true`, `visits review lt 3`, `otherwise`. */
function describeRule(rule: Rule, rules: number): string {
  if (rule.when) return describeCondition(rule.when);
  return rules === 1 ? "ok" : "otherwise";
}

/** A condition as the graph labels it: `output.approved equals true`, `visits review lt 3`. */
export function describeCondition(condition: NonNullable<Rule["when"]>): string {
  if ("all" in condition) return condition.all.map(describeCondition).join(" and ");
  if ("any" in condition) return condition.any.map(describeCondition).join(" or ");
  if ("not" in condition) return `not (${describeCondition(condition.not)})`;
  if ("guard" in condition) return `guard ${condition.guard}`;
  if ("visits" in condition) return `visits ${condition.visits} ${condition.op} ${condition.value}`;
  return condition.op === "exists"
    ? `${condition.path} exists`
    : `${condition.path} ${condition.op} ${JSON.stringify(condition.value)}`;
}
