import {
  DEFAULT_MAX_ITEMS,
  type PipelineDefinition,
  type Target,
} from "../definitions/pipeline-types.js";
import { describePolicy } from "./pipeline-parallel.js";
import { groupState } from "./pipeline-states.js";

/**
 * What a parallel group's one state runs, from the definition: its siblings (spawned by the
 * state, not states of their own: see `spawnedGroupState`), its join and its policy. The graph
 * and the chart draw the state from the machine and name its siblings from this.
 */
export interface GroupDescription {
  /** The stage the group fans out from. */
  from: string;
  /** What users see the group called: its siblings, `test ∥ lint` (its state's key is internal). */
  name: string;
  siblings: readonly string[];
  join: Target;
  /** `fail-fast`, `all-settled`, `any`, `quorum 2`. */
  policy: string;
  /** How many siblings run at once, at most. */
  maxConcurrency: number;
  /**
   * A map group's: the path of its list and its longest; its `siblings` is its one stage, the
   * lane every item runs in.
   */
  map?: { over: string; maxItems: number };
}

/** The pipeline's parallel groups, by the key of the state each compiles to (`execute_parallel`). */
export function groupDescriptions(pipeline: PipelineDefinition): Map<string, GroupDescription> {
  const found = new Map<string, GroupDescription>();
  for (const [from, transition] of Object.entries(pipeline.next)) {
    if (transition.kind === "map") {
      const maxItems = transition.maxItems ?? DEFAULT_MAX_ITEMS;
      found.set(groupState(from), {
        from,
        name: mapName(transition.stage, transition.over),
        siblings: [transition.stage],
        join: transition.join,
        policy: describePolicy(transition.policy),
        maxConcurrency: transition.maxConcurrency ?? maxItems,
        map: { over: transition.over, maxItems },
      });
      continue;
    }
    if (transition.kind !== "parallel") continue;
    found.set(groupState(from), {
      from,
      name: groupName(transition.siblings),
      siblings: transition.siblings,
      join: transition.join,
      policy: describePolicy(transition.policy),
      maxConcurrency: transition.maxConcurrency ?? transition.siblings.length,
    });
  }
  return found;
}

/**
 * A parallel group's name as users see it, its siblings in declared order (`test ∥ lint`): the
 * state a run executes it as (`execute_parallel`) is the compiler's, named after nothing users wrote.
 */
export const groupName = (siblings: readonly string[]): string => siblings.join(" ∥ ");

/** A map group's name as users see it: its stage, run for each item of its list. */
export const mapName = (stage: string, over: string): string => `${stage} × each of ${over}`;
