import { DIAGNOSTIC_CODES, type Diagnostic, diagnostic, type Position } from "../diagnostics.js";
import type { WorkflowDefinition } from "./types.js";

/**
 * Takes out of `loaded` every workflow on a subworkflow cycle, every one that references a
 * workflow that is missing or did not load, and — unlike upstream, whose cascade stops after
 * one level — every workflow that depends on a removed one, transitively.
 * Each removal is a diagnostic on the workflow removed, saying why.
 */
export function pruneReferences(
  loaded: ReadonlyMap<string, WorkflowDefinition>,
  failed: ReadonlySet<string>,
): { kept: Map<string, WorkflowDefinition>; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const removed = new Map<string, string>();
  const remove = (
    workflow: WorkflowDefinition,
    at: Position,
    code: Diagnostic["code"],
    why: string,
  ) => {
    removed.set(workflow.key, why);
    diagnostics.push(
      diagnostic(workflow.file, at, code, `workflow "${workflow.key}" is removed: ${why}`),
    );
  };

  for (const cycle of cyclesOf(loaded)) {
    const path = [...cycle, cycle[0]].join(" → ");
    for (const key of cycle) {
      if (removed.has(key)) continue;
      const workflow = loaded.get(key) as WorkflowDefinition;
      const next = cycle[(cycle.indexOf(key) + 1) % cycle.length] as string;
      remove(
        workflow,
        referenceTo(workflow, next),
        DIAGNOSTIC_CODES.workflowCycle,
        `its subworkflows form a cycle: ${path}`,
      );
    }
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const workflow of loaded.values()) {
      if (removed.has(workflow.key)) continue;
      const broken = subworkflowKeys(workflow).find((key) => !loaded.has(key) || removed.has(key));
      if (broken === undefined) continue;
      const why = removed.has(broken)
        ? `it uses subworkflow "${broken}", which is removed (${removed.get(broken)})`
        : failed.has(broken)
          ? `it uses subworkflow "${broken}", which did not load (its problems are reported in it)`
          : `it uses subworkflow "${broken}", and there is no workflow directory of that name`;
      remove(
        workflow,
        referenceTo(workflow, broken),
        DIAGNOSTIC_CODES.workflowReferenceBroken,
        why,
      );
      changed = true;
    }
  }
  const kept = new Map([...loaded].filter(([key]) => !removed.has(key)));
  return { kept, diagnostics };
}

export const subworkflowKeys = (workflow: WorkflowDefinition): string[] =>
  workflow.phases.flatMap((phase) => (phase.kind === "subworkflow" ? [phase.key] : []));

function referenceTo(workflow: WorkflowDefinition, key: string): Position {
  const reference = workflow.phases.find((p) => p.kind === "subworkflow" && p.key === key);
  return reference?.kind === "subworkflow" ? reference.at : { line: 1, column: 1 };
}

/**
 * Every elementary cycle found by a depth-first walk over references between loaded workflows
 * (a self-reference included), each as its keys in order; a cycle is reported if it adds a key.
 */
function cyclesOf(loaded: ReadonlyMap<string, WorkflowDefinition>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "closed">();
  const onCycle = new Set<string>();
  const walk = (key: string, path: string[]) => {
    state.set(key, "open");
    for (const next of subworkflowKeys(loaded.get(key) as WorkflowDefinition)) {
      if (!loaded.has(next)) continue;
      if (state.get(next) === "open") {
        const walked = [...path, key];
        const members = walked.slice(walked.indexOf(next));
        if (members.some((k) => !onCycle.has(k))) {
          cycles.push(members);
          for (const k of members) onCycle.add(k);
        }
      } else if (!state.has(next)) walk(next, [...path, key]);
    }
    state.set(key, "closed");
  };
  for (const key of [...loaded.keys()].sort()) if (!state.has(key)) walk(key, []);
  return cycles;
}
