import { basename } from "node:path";
import type { Interactor } from "../compiler/interactor.js";
import type { Script } from "./script-file.js";

/** The round of a stage execution: the last segment of `<run>/<stage>/<visit>`. */
const roundOf = (stageExecutionId: string): number =>
  Number(stageExecutionId.slice(stageExecutionId.lastIndexOf("/") + 1));

/**
 * Who answers ask stages from a script's `answers`: round n of a stage gets its n-th answer, so a
 * resumed or reopened run gets the same answers as an unbroken one. A stage it has no answer for
 * is left to somebody else (the run suspends when nobody is there). Absent without answers.
 */
export function scriptAnswerer(script: Script): Interactor | undefined {
  if (!script.answers?.size) return undefined;
  const name = basename(script.file);
  return {
    name: `script ${name}`,
    async askValue(request) {
      const round = roundOf(request.stageExecutionId);
      const answer = script.answers?.get(request.stageId)?.[round - 1];
      if (answer === undefined)
        throw new Error(`${name} has no answer for round ${round} of ${request.stageId}`);
      return answer;
    },
  };
}
