import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
/**
 * The artifacts of a task-lifecycle task directory and what each phase may conclude from them. Every
 * function reads the disk afresh and decides the same way on the same files, so running a phase
 * again is safe. A problem is a reason the phase cannot advance, naming the file.
 */
/** Where the task's artifacts live, relative to the run's root. */
export const TASK_DIR = "task";
const taskPath = (root, file) => join(root, TASK_DIR, file);
/** A JSON file of the task directory, checked by `shape` (which names what is wrong, or nothing). */
function readJson(root, file, shape) {
  const path = taskPath(root, file);
  if (!existsSync(path)) return { ok: false, problem: `${TASK_DIR}/${file} is missing` };
  let value;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return { ok: false, problem: `${TASK_DIR}/${file} is not valid JSON` };
  }
  const wrong = shape(value);
  return wrong
    ? { ok: false, problem: `${TASK_DIR}/${file} is malformed: ${wrong}` }
    : { ok: true, value: value };
}
const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const isStringList = (value) =>
  Array.isArray(value) && value.every((item) => typeof item === "string");
const planShape = (value) => {
  if (!isObject(value)) return "it must be a JSON object";
  if (typeof value.summary !== "string" || !value.summary.trim())
    return "summary must be a non-empty string";
  if (!isStringList(value.blockingQuestions))
    return "blockingQuestions must be a list of strings (empty when none remain)";
  if (value.files !== undefined && !isStringList(value.files))
    return "files, when given, must be a list of paths";
  return undefined;
};
const filesShape = (value) =>
  isObject(value) && isStringList(value.files) && value.files.length > 0
    ? undefined
    : 'it must be {"files": [<path>, …]} with at least one path';
/** The files the plan may touch: plan.files.json, or the plan's own `files` when it is absent. */
export function plannedFiles(root) {
  const listed = readJson(root, "planning/plan.files.json", filesShape);
  if (listed.ok) return { ok: true, value: listed.value.files };
  if (existsSync(taskPath(root, "planning/plan.files.json"))) return listed;
  const plan = readJson(root, "planning/planning.ai.json", planShape);
  if (plan.ok && plan.value.files?.length) return { ok: true, value: plan.value.files };
  return {
    ok: false,
    problem: `${TASK_DIR}/planning/plan.files.json is missing, and planning.ai.json lists no files to infer it from`,
  };
}
/**
 * Planning → plan-review needs the plan, its document (`plan.md`, which the plan review
 * reads), no blocking question, and the file plan.
 */
export function planningOutcome(root) {
  const plan = readJson(root, "planning/planning.ai.json", planShape);
  if (!plan.ok) return { problem: plan.problem };
  const document = taskPath(root, "planning/plan.md");
  if (!existsSync(document) || !readFileSync(document, "utf8").trim())
    return { problem: `${TASK_DIR}/planning/plan.md is missing or empty` };
  const files = plannedFiles(root);
  if (!files.ok) return { problem: files.problem };
  const open = plan.value.blockingQuestions;
  return open.length > 0
    ? { next: "planning", reason: `blocking questions remain: ${open.join("; ")}` }
    : { next: "plan-review", reason: "the plan is complete" };
}
/** Ok and not blocked → codegen; anything else back to planning. */
export function planReviewOutcome(root) {
  const review = readJson(root, "review/plan-review.json", (value) =>
    isObject(value) && typeof value.ok === "boolean" && typeof value.blocked === "boolean"
      ? undefined
      : "ok and blocked must both be booleans",
  );
  if (!review.ok) return { problem: review.problem };
  const { ok, blocked } = review.value;
  return ok && !blocked
    ? { next: "codegen", reason: "the plan review passed" }
    : {
        next: "planning",
        reason: blocked ? "the plan review is blocked" : "the plan needs changes",
      };
}
/** Every file under `dir`, relative to it, sorted. */
function filesUnder(dir) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((entry) => statSync(join(dir, entry)).isFile())
    .map((entry) => relative(dir, join(dir, entry)))
    .sort();
}
/**
 * The model says whether codegen completed, found the plan unclear or wants to run again;
 * completed needs the diff and the generated files, all of them inside the plan's file list.
 */
export function codegenOutcome(root, signal) {
  if (signal === "plan-unclear") return { next: "plan-review", reason: "the plan is unclear" };
  if (signal === "rerun") return { next: "codegen", reason: "codegen asked to run again" };
  const diff = taskPath(root, "code/diff.patch");
  if (!existsSync(diff) || !readFileSync(diff, "utf8").trim())
    return { problem: `${TASK_DIR}/code/diff.patch is missing or empty` };
  const generated = filesUnder(taskPath(root, "code/files"));
  if (generated.length === 0) return { problem: `${TASK_DIR}/code/files/ holds no file` };
  const planned = plannedFiles(root);
  if (!planned.ok) return { next: "planning", reason: planned.problem };
  const outside = generated.filter((file) => !planned.value.includes(file));
  return outside.length > 0
    ? { next: "planning", reason: `scope mismatch: ${outside.join(", ")} not in the plan` }
    : { next: "review", reason: `generated ${generated.join(", ")}` };
}
/** No blocking issue → test; a blocking plan issue → planning; a code one → codegen. */
export function reviewOutcome(root) {
  const review = readJson(root, "review/code-review.json", (value) =>
    isObject(value) &&
    Array.isArray(value.issues) &&
    value.issues.every(
      (issue) =>
        isObject(issue) &&
        ["blocking", "minor"].includes(String(issue.severity)) &&
        ["code", "plan"].includes(String(issue.area)) &&
        typeof issue.message === "string",
    )
      ? undefined
      : 'it must be {"issues": [{severity: blocking|minor, area: code|plan, message}, …]}',
  );
  if (!review.ok) return { problem: review.problem };
  const blocking = review.value.issues.filter((issue) => issue.severity === "blocking");
  if (blocking.some((issue) => issue.area === "plan"))
    return { next: "planning", reason: "the review found the plan flawed" };
  if (blocking.length > 0)
    return { next: "codegen", reason: `blocking: ${blocking.map((i) => i.message).join("; ")}` };
  return { next: "test", reason: "no blocking issue" };
}
/** A revert ends the task once its record is written. */
export function revertOutcome(root) {
  const record = readJson(root, "revert/revert.json", (value) =>
    isObject(value) && typeof value.reason === "string" && isStringList(value.restored)
      ? undefined
      : 'it must be {"reason": …, "restored": [<path>, …]}',
  );
  return record.ok ? { next: "done", reason: "reverted" } : { problem: record.problem };
}
