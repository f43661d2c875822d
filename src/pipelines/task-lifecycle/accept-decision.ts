import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { TransitionNotice } from "../../definitions/contract.js";
import type { JsonSchema } from "../../definitions/json-schema.js";
import { type Phase, TASK_DIR } from "./artifacts.js";

/** Seed 004 §3.10–3.11: each decision a person may take at accept, and where it sends the task. */
export const ACCEPT_DECISIONS = {
  accepted: "done",
  "changes-requested": "codegen",
  "needs-review": "review",
  "upstream-problem": "planning",
  revert: "revert",
} as const satisfies Record<string, Phase | "done">;

/** The accept phase's question: one of the decisions, and why. */
export const acceptQuestion: { prompt: string; schema: JsonSchema } = {
  prompt:
    "Is the tested change accepted? decision: accepted (done), changes-requested (back to codegen), needs-review (back to review), upstream-problem (back to planning) or revert; reason: why",
  schema: {
    type: "object",
    required: ["decision"],
    additionalProperties: false,
    properties: {
      decision: { enum: Object.keys(ACCEPT_DECISIONS) },
      reason: { type: "string" },
    },
  },
};

/**
 * Records the last decision taken at accept in `task/accept/decision.json` (written whole, by a
 * rename), the artifact the seed names, whenever the run is past accept: a resume's first notice
 * may already be past it, and a repeated notice writes the same file again.
 */
export function writeDecision(notice: TransitionNotice): void {
  const answer = notice.results.accept?.output;
  if (notice.state === "accept" || answer === undefined) return;
  const path = join(notice.root, TASK_DIR, "accept/decision.json");
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(answer, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}
