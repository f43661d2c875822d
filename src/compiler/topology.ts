import { DONE, FAIL, type PipelineDefinition, type Target } from "../definitions/pipeline-types.js";

/** The targets a stage's transition may lead to, siblings and join of a parallel group included. */
export function successors(pipeline: PipelineDefinition, stageId: string): Target[] {
  const transition = pipeline.next[stageId];
  if (!transition) return [DONE, FAIL];
  if (transition.kind === "parallel") return [...transition.siblings, transition.join, FAIL];
  if (transition.kind === "map") return [transition.stage, transition.join, FAIL];
  return [...transition.rules.map((rule) => rule.to), FAIL];
}

/**
 * What compiling, checking and running a pipeline ask of its graph, each answer worked out once
 * per definition and stage, when first asked: compiling asks only which stages have a state of
 * their own (linear), and a control event asks about the stage the run is at.
 */
class Topology {
  private readonly ids: string[];
  private readonly reachableSets = new Map<string, Set<string>>();
  private readonly reachableLists = new Map<string, string[]>();
  private readonly overrideLists = new Map<string, string[]>();
  private readonly overrideSets = new Map<string, Set<string>>();
  /** By stage: the parallel group it is a sibling of. */
  readonly groupOf = new Map<string, string>();
  /** Stages entered other than by a fan-out: the entry, rule targets, joins. */
  readonly targeted: Set<string>;

  constructor(private readonly pipeline: PipelineDefinition) {
    this.ids = Object.keys(pipeline.stages);
    this.targeted = new Set([pipeline.entry]);
    for (const [from, transition] of Object.entries(pipeline.next)) {
      if (transition.kind === "parallel") {
        for (const sibling of transition.siblings)
          if (!this.groupOf.has(sibling)) this.groupOf.set(sibling, from);
        this.targeted.add(transition.join);
      } else if (transition.kind === "map") {
        if (!this.groupOf.has(transition.stage)) this.groupOf.set(transition.stage, from);
        this.targeted.add(transition.join);
      } else for (const rule of transition.rules) this.targeted.add(rule.to);
    }
  }

  reachableSet(stageId: string): Set<string> {
    return memo(this.reachableSets, stageId, () => walkFrom(this.pipeline, stageId));
  }

  reachable(stageId: string): string[] {
    return memo(this.reachableLists, stageId, () => {
      const seen = this.reachableSet(stageId);
      return this.ids.filter((id) => seen.has(id));
    });
  }

  reaching(stageId: string): string[] {
    return this.ids.filter((id) => id === stageId || this.reachableSet(id).has(stageId));
  }

  overrideTargets(stageId: string): string[] {
    return memo(this.overrideLists, stageId, () => overridesOf(this.pipeline, this, stageId));
  }

  overrideSet(stageId: string): Set<string> {
    return memo(this.overrideSets, stageId, () => new Set(this.overrideTargets(stageId)));
  }
}

function memo<T>(cache: Map<string, T>, key: string, work: () => T): T {
  const known = cache.get(key);
  if (known !== undefined) return known;
  const value = work();
  cache.set(key, value);
  return value;
}

const topologies = new WeakMap<PipelineDefinition, Topology>();

/** A definition's topology; definitions are not changed once loaded, so it is kept with it. */
function topologyOf(pipeline: PipelineDefinition): Topology {
  const known = topologies.get(pipeline);
  if (known) return known;
  const topology = new Topology(pipeline);
  topologies.set(pipeline, topology);
  return topology;
}

/** One breadth-first walk along declared transitions. */
function walkFrom(pipeline: PipelineDefinition, stageId: string): Set<string> {
  const seen = new Set<string>();
  const queue = successors(pipeline, stageId);
  for (let i = 0; i < queue.length; i++) {
    const next = queue[i] as string;
    if (seen.has(next) || !(next in pipeline.stages)) continue;
    seen.add(next);
    queue.push(...successors(pipeline, next));
  }
  return seen;
}

/** Every stage a run can get to from `stageId` along declared transitions (itself excluded unless on a loop). */
export function reachableStages(pipeline: PipelineDefinition, stageId: string): string[] {
  return topologyOf(pipeline).reachable(stageId);
}

/** The stages from which a run can get to `stageId`, itself included: the stages a REDO of it may come from. */
function reachingStages(pipeline: PipelineDefinition, stageId: string): string[] {
  return topologyOf(pipeline).reaching(stageId);
}

/** The group a stage belongs to as a sibling (or a map's stage), by the id of the stage that fans out. */
export function groupOf(pipeline: PipelineDefinition, stageId: string): string | undefined {
  return topologyOf(pipeline).groupOf.get(stageId);
}

/** Siblings run inside their group's parallel state; they have a state of their own only if a rule leads to them. */
export function onlyASibling(pipeline: PipelineDefinition, stageId: string): boolean {
  const topology = topologyOf(pipeline);
  return topology.groupOf.has(stageId) && !topology.targeted.has(stageId);
}

/**
 * The stages an OVERRIDE may move a run to from `stageId`: those a rule leads to from here or
 * from a stage reachable from here. A sibling is entered only by its fan-out and a join only by
 * its group completing, so neither is a target through those ways in.
 */
export function overrideTargets(pipeline: PipelineDefinition, stageId: string): string[] {
  return topologyOf(pipeline).overrideTargets(stageId);
}

/** Whether an OVERRIDE may move a run from `from` to `to` (see overrideTargets). */
export function mayOverride(pipeline: PipelineDefinition, from: string, to: string): boolean {
  return topologyOf(pipeline).overrideSet(from).has(to);
}

/** Whether a run at `from` may REDO `target` (see redoTargets). */
export function mayRedo(pipeline: PipelineDefinition, from: string, target: string): boolean {
  if (from === target) return true;
  if (pipeline.override === "adjacent") return topologyOf(pipeline).overrideSet(from).has(target);
  return topologyOf(pipeline).reachableSet(target).has(from);
}

function overridesOf(pipeline: PipelineDefinition, topology: Topology, stageId: string): string[] {
  if (pipeline.override === "adjacent") return adjacentStages(pipeline, stageId);
  const reachable = topology.reachable(stageId);
  const ruleTargets = new Set(
    [stageId, ...reachable].flatMap((id) => {
      const transition = pipeline.next[id];
      return transition?.kind === "rules" ? transition.rules.map((rule) => rule.to) : [];
    }),
  );
  return reachable.filter((id) => ruleTargets.has(id));
}

/**
 * The stages a REDO may re-enter from `stageId` (once they have run): this one or one a run could
 * have come here through; in an `adjacent` pipeline only this one or a stage a rule of it leads
 * to, so that a redo never skips a stage either.
 */
export function redoTargets(pipeline: PipelineDefinition, stageId: string): string[] {
  if (pipeline.override !== "adjacent") return reachingStages(pipeline, stageId);
  const adjacent = new Set(adjacentStages(pipeline, stageId));
  return Object.keys(pipeline.stages).filter((id) => id === stageId || adjacent.has(id));
}

/** The stages a rule of `stageId` leads to: the only override targets of an `adjacent` pipeline. */
function adjacentStages(pipeline: PipelineDefinition, stageId: string): string[] {
  const transition = pipeline.next[stageId];
  const targets = transition?.kind === "rules" ? transition.rules.map((rule) => rule.to) : [];
  return Object.keys(pipeline.stages).filter((id) => targets.includes(id));
}
