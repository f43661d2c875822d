import { describeCondition } from "../compiler/pipeline-sequence.js";
import { onlyASibling } from "../compiler/topology.js";
import {
  type Condition,
  DONE,
  FAIL,
  type JoinPolicy,
  type PipelineDefinition,
  type Rule,
  type Transition,
} from "../definitions/pipeline-types.js";

export const MUTATION_KINDS = [
  "swap-target",
  "drop-rule",
  "negate-condition",
  "shift-threshold",
  "change-policy",
] as const;
export type MutationKind = (typeof MUTATION_KINDS)[number];

/** A copy of a pipeline with one of its rules (or a group's policy or join) changed. */
export interface Mutant {
  id: string;
  kind: MutationKind;
  /** The stage whose rules, or whose group, changed. */
  stage: string;
  /** What changed: `review rule 2 (visits review lt 3) goes to plan, not execute`. */
  description: string;
  pipeline: PipelineDefinition;
}

/** One change that can be made, before a mutant is made of it. */
interface Candidate {
  kind: MutationKind;
  stage: string;
  description: string;
  next: Transition;
}

/**
 * `count` mutants of the pipeline's rules, chosen with a generator seeded by `seed` (the same
 * seed, the same mutants): each time a kind of change (among those the pipeline has a place for)
 * and then a place, with no change made twice. Fewer when the pipeline has fewer changes to make.
 */
export function mutantsOf(pipeline: PipelineDefinition, count: number, seed = 1): Mutant[] {
  const random = seeded(seed);
  const byKind = new Map<MutationKind, Candidate[]>();
  for (const candidate of candidatesOf(pipeline))
    byKind.set(candidate.kind, [...(byKind.get(candidate.kind) ?? []), candidate]);
  const mutants: Mutant[] = [];
  while (mutants.length < count && byKind.size > 0) {
    const kinds = [...byKind.keys()];
    const kind = kinds[Math.floor(random() * kinds.length)] as MutationKind;
    const left = byKind.get(kind) as Candidate[];
    const [chosen] = left.splice(Math.floor(random() * left.length), 1);
    if (left.length === 0) byKind.delete(kind);
    if (!chosen) continue;
    mutants.push({
      id: `m-${mutants.length + 1}`,
      kind: chosen.kind,
      stage: chosen.stage,
      description: chosen.description,
      pipeline: { ...pipeline, next: { ...pipeline.next, [chosen.stage]: chosen.next } },
    });
  }
  return mutants;
}

/** Every change the mutation operators can make to the pipeline's own rules and groups. */
function candidatesOf(pipeline: PipelineDefinition): Candidate[] {
  const targets = [
    ...Object.keys(pipeline.stages).filter((id) => !onlyASibling(pipeline, id)),
    DONE,
    FAIL,
  ];
  return Object.entries(pipeline.next).flatMap(([stage, transition]) =>
    transition.kind === "rules"
      ? ruleCandidates(stage, transition.rules, targets)
      : groupCandidates(stage, transition, targets),
  );
}

function ruleCandidates(stage: string, rules: readonly Rule[], targets: string[]): Candidate[] {
  const withRules = (changed: Rule[]): Transition => ({ kind: "rules", rules: changed });
  const replaced = (at: number, rule: Rule) => rules.map((r, i) => (i === at ? rule : r));
  return rules.flatMap((rule, at) => {
    const name = `${stage} rule ${at + 1} (${rule.when ? describeCondition(rule.when) : "otherwise"} → ${rule.to})`;
    const swaps = targets
      .filter((to) => to !== rule.to)
      .map((to) => ({
        kind: "swap-target" as const,
        stage,
        description: `${name} goes to ${to}`,
        next: withRules(replaced(at, { ...rule, to })),
      }));
    const drop = {
      kind: "drop-rule" as const,
      stage,
      description: `${name} dropped`,
      next: withRules(rules.filter((_, i) => i !== at)),
    };
    const negate = rule.when
      ? [
          {
            kind: "negate-condition" as const,
            stage,
            description: `${name} negated`,
            next: withRules(replaced(at, { ...rule, when: { not: rule.when } })),
          },
        ]
      : [];
    const shifts = rule.when
      ? thresholdShifts(rule.when).map(({ when, was, now }) => ({
          kind: "shift-threshold" as const,
          stage,
          description: `${name}: ${was} becomes ${now}`,
          next: withRules(replaced(at, { ...rule, when })),
        }))
      : [];
    return [...swaps, drop, ...negate, ...shifts];
  });
}

/**
 * Each numeric threshold of a condition moved one up and one down (a `visits` bound not below
 * zero): the condition with it moved, and what it read and reads.
 */
function thresholdShifts(condition: Condition): { when: Condition; was: string; now: string }[] {
  if ("all" in condition || "any" in condition) {
    const [key, parts] =
      "all" in condition ? (["all", condition.all] as const) : (["any", condition.any] as const);
    return parts.flatMap((part, i) =>
      thresholdShifts(part).map((shift) => ({
        ...shift,
        when: { [key]: parts.map((p, j) => (j === i ? shift.when : p)) } as Condition,
      })),
    );
  }
  if ("not" in condition)
    return thresholdShifts(condition.not).map((shift) => ({ ...shift, when: { not: shift.when } }));
  if ("guard" in condition || typeof condition.value !== "number") return [];
  const value = condition.value;
  return [value + 1, value - 1]
    .filter((moved) => !("visits" in condition) || moved >= 0)
    .map((moved) => {
      const when = { ...condition, value: moved } as Condition;
      return { when, was: describeCondition(condition), now: describeCondition(when) };
    });
}

function groupCandidates(
  stage: string,
  group: Extract<Transition, { kind: "parallel" | "map" }>,
  targets: string[],
): Candidate[] {
  const name = `${stage}'s group (${describe(group.policy)}, joining at ${group.join})`;
  // A map group's size is its list's: its quorums are tried as for two items.
  const n = group.kind === "map" ? 2 : group.siblings.length;
  const policies: JoinPolicy[] = [
    { kind: "fail-fast" },
    { kind: "all-settled" },
    { kind: "any" },
    ...Array.from({ length: n }, (_, k) => ({ kind: "quorum" as const, k: k + 1 })),
  ];
  const changed = policies
    .filter((policy) => describe(policy) !== describe(group.policy))
    .map((policy) => ({
      kind: "change-policy" as const,
      stage,
      description: `${name} under ${describe(policy)}`,
      next: { ...group, policy },
    }));
  const joins = targets
    .filter((to) => to !== group.join && to !== stage && to !== DONE && to !== FAIL)
    .map((join) => ({
      kind: "swap-target" as const,
      stage,
      description: `${name} joins at ${join}`,
      next: { ...group, join },
    }));
  return [...changed, ...joins];
}

const describe = (policy: JoinPolicy): string =>
  policy.kind === "quorum" ? `quorum ${policy.k}` : policy.kind;

/** A small seeded generator of numbers in [0, 1) (mulberry32): the same seed, the same sequence. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
