import { DIAGNOSTIC_CODES } from "./diagnostics.js";
import type { PipelineDraft, Report } from "./pipeline-draft.js";
import { ENDS, type Transition } from "./pipeline-types.js";

/**
 * Checks over the declared topology: stages the entry never reaches and stages with no way to
 * an end (warnings), and loops no condition can leave (an error: the run would never stop).
 */
export function checkGraph(draft: PipelineDraft, report: Report): void {
  const isStage = (id: string) => draft.stageIds.has(id);
  const entered = (id: string): string[] => targetsOf(draft.next[id]).filter(isStage);

  if (draft.entry !== undefined && isStage(draft.entry)) {
    const reached = reachable([draft.entry], entered);
    for (const id of [...draft.stageIds].filter((id) => !reached.has(id))) {
      report(
        ["stages", id],
        DIAGNOSTIC_CODES.stageUnreachable,
        `stages.${id}: no transition from entry ${draft.entry} leads to ${id}, so it never runs`,
        "warning",
      );
    }
  }

  const ending = stagesThatCanEnd(draft);
  for (const id of Object.keys(draft.next).filter((id) => isStage(id) && !ending.has(id))) {
    report(
      ["next", id],
      DIAGNOSTIC_CODES.stageNoExit,
      `next.${id}: no path from ${id} leads to done or fail; a run that gets here can only end when no rule matches`,
      "warning",
    );
  }

  for (const loop of unconditionalLoops(draft)) {
    const [first] = loop;
    report(
      ["next", first as string],
      DIAGNOSTIC_CODES.pipelineUnboundedLoop,
      `next.${first}: ${[...loop, first].join(" → ")} repeats forever, since every transition on the loop is unconditional; give one a condition with a way out, e.g. { when: { visits: ${first}, lt: 3 }, to: … }`,
    );
  }
}

/** Every stage or end a transition may lead to: rule targets, or siblings and join. */
function targetsOf(transition: Transition | undefined): string[] {
  if (!transition) return [];
  if (transition.kind === "rules") return transition.rules.map((rule) => rule.to);
  if (transition.kind === "map") return [transition.stage, transition.join];
  return [...transition.siblings, transition.join];
}

/** Every id reached from `from` along `next`, `from` included. */
function reachable(from: readonly string[], next: (id: string) => string[]): Set<string> {
  const seen = new Set(from);
  const queue = [...seen];
  for (let i = 0; i < queue.length; i++) {
    for (const target of next(queue[i] as string)) {
      if (seen.has(target)) continue;
      seen.add(target);
      queue.push(target);
    }
  }
  return seen;
}

/**
 * Stages with a declared way to an end: no transition of their own (the pipeline ends there), a
 * rule to done or fail, a join on done, or a way into such a stage. Siblings hand on to their
 * group's join, so a group continues only through it. Found backwards from the ends, each
 * transition followed once.
 */
function stagesThatCanEnd(draft: PipelineDraft): Set<string> {
  const comingFrom = new Map<string, string[]>();
  for (const id of draft.stageIds) {
    for (const target of continuations(draft.next[id])) {
      const before = comingFrom.get(target);
      if (before) before.push(id);
      else comingFrom.set(target, [id]);
    }
  }
  const ending = new Set<string>(ENDS);
  for (const id of draft.stageIds) if (!draft.next[id]) ending.add(id);
  // A target that names no stage is reported on its own; counting it as an end avoids echoes.
  for (const target of comingFrom.keys()) if (!draft.stageIds.has(target)) ending.add(target);
  return reachable([...ending], (id) => comingFrom.get(id) ?? []);
}

function continuations(transition: Transition | undefined): string[] {
  if (!transition) return [];
  return transition.kind === "rules" ? transition.rules.map((r) => r.to) : [transition.join];
}

/** Loops along transitions that always move on: a first rule without `when`, or a group's join. */
function unconditionalLoops(draft: PipelineDraft): string[][] {
  const forced = (id: string): string | undefined => {
    const transition = draft.next[id];
    if (transition?.kind === "parallel" || transition?.kind === "map") return transition.join;
    const [first] = transition?.rules ?? [];
    return first && first.when === undefined ? first.to : undefined;
  };
  const order = new Map([...draft.stageIds].map((id, i) => [id, i]));
  const loops: string[][] = [];
  const done = new Set<string>();
  for (const start of draft.stageIds) {
    const walk: string[] = [];
    const onWalk = new Set<string>();
    let at: string | undefined = start;
    while (at !== undefined && draft.stageIds.has(at) && !onWalk.has(at) && !done.has(at)) {
      walk.push(at);
      onWalk.add(at);
      at = forced(at);
    }
    for (const id of walk) done.add(id);
    if (at === undefined || !onWalk.has(at)) continue;
    const loop = walk.slice(walk.indexOf(at));
    // Told from the stage declared first, so the same loop always reads the same.
    const turn = loop.reduce(
      (best, id, i) => ((order.get(id) ?? 0) < (order.get(loop[best] as string) ?? 0) ? i : best),
      0,
    );
    loops.push([...loop.slice(turn), ...loop.slice(0, turn)]);
  }
  return loops;
}
