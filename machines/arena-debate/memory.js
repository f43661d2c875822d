import { duels, ROLES, START_RATING } from "./consensus.js";
/**
 * What the arena debate keeps between runs, in the pipeline memory (the run store's `memory`
 * table in a durable run): each agent's rating, the past debates, the traces, and the run's
 * deliberation for store-memory, which the sandbox (handing on its execution) comes between.
 */
export const NS = {
  elo: "arena-debate/elo",
  debates: "arena-debate/debates",
  traces: "arena-debate/traces",
  deliberations: "arena-debate/deliberations",
};
const RECENT = 5;
const SIMILAR = 3;
/** How many past debates the similarity lookup reads. */
const SEARCHED = 200;
/** An agent's standing as of the start of `runId`: a write by this very run is not counted. */
async function standingBefore(memory, role, runId) {
  const stored = await memory.recall(NS.elo, role);
  if (!stored) return START_RATING;
  const { rating, matches, successes } = stored.lastRunId === runId ? stored.before : stored;
  return { rating, matches, successes };
}
export async function ratingsBefore(memory, runId) {
  const ratings = [];
  for (const role of ROLES) ratings.push([role, await standingBefore(memory, role, runId)]);
  return Object.fromEntries(ratings);
}
const words = (text) => {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
    counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
};
/** Cosine similarity of two texts' word counts: 1 for the same words, 0 for none in common. */
export function similarity(a, b) {
  const left = words(a);
  const right = words(b);
  let dot = 0;
  for (const [word, count] of left) dot += count * (right.get(word) ?? 0);
  const norm = (counts) =>
    Math.sqrt([...counts.values()].reduce((sum, count) => sum + count * count, 0));
  const both = norm(left) * norm(right);
  return both === 0 ? 0 : dot / both;
}
/** The five latest debates, and the past debates most like `task` (tagging by words). */
export async function pastDebates(memory, task) {
  const past = (await memory.recent(NS.debates, SEARCHED)).map((entry) => entry.value);
  const similar = past
    .map((debate) => ({
      ...debate,
      similarity: Math.round(similarity(task, debate.task) * 1000) / 1000,
    }))
    .filter((debate) => debate.similarity > 0)
    .sort((a, b) => b.similarity - a.similarity)
    .slice(0, SIMILAR);
  return { recent: past.slice(0, RECENT), similar };
}
/**
 * Stores the debate and every participant's new standing: its duel points, one more match, and
 * one more success when the plan ran. Written against the standing before this run, so storing
 * the same run again (a resume after a crash) changes nothing more.
 */
export async function storeDebate(memory, runId, record, succeeded) {
  const points = duels(record.arguments);
  const participants = ROLES.filter((role) => record.arguments.some((arg) => arg.role === role));
  const after = {};
  for (const role of participants) {
    const before = await standingBefore(memory, role, runId);
    const now = {
      rating: before.rating + (points[role] ?? 0),
      matches: before.matches + 1,
      successes: before.successes + (succeeded ? 1 : 0),
    };
    after[role] = now;
    const stored = { ...now, lastRunId: runId, before };
    await memory.remember(NS.elo, role, stored);
  }
  const debate = {
    traceId: record.traceId,
    task: record.task,
    decision: record.ruling?.decision ?? "REJECT",
    consensus: record.ruling?.consensus ?? 0,
  };
  await memory.remember(NS.debates, record.traceId, debate);
  return after;
}
