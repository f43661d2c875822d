/**
 * The arena debate's consensus maths, pure: the weight of each argument (role weight × Elo × accuracy),
 * the weighted vote, the "Elo duels", and the gates that compare the result to the pipeline's
 * settings (re-debate, veto, reject). Thresholds the seed's document states are settings;
 * the constants below are those its code uses and its document does not mention.
 */

/** @typedef {"analyst" | "solution" | "critic" | "security" | "optimizer"} Role */
/** @typedef {"pro" | "contra"} Stance */
/**
 * @typedef {object} Argument
 * @property {Role} role
 * @property {number} pass 1 for the first debate, then one more per re-debate.
 * @property {Stance} stance
 * @property {number} confidence
 * @property {string} argument
 */
/**
 * An agent's standing, kept between runs.
 * @typedef {object} Rating
 * @property {number} rating
 * @property {number} matches Debates it took part in.
 * @property {number} successes Of those, the ones whose plan then ran successfully.
 */
/**
 * @typedef {object} Settings
 * @property {number} consensusTarget Re-debate while consensus is below this…
 * @property {number} maxPasses …and fewer debate passes than this have run.
 * @property {number} vetoConfidence A Security objection this confident vetoes the plan.
 * @property {number} minConsensus Consensus below this after the last pass rejects the plan.
 */
/**
 * @typedef {object} Tally
 * @property {number} consensus pro / (pro + contra) of the weighted votes; 0 when nobody voted.
 * @property {number} pro
 * @property {number} contra
 * @property {string[]} conflicts
 * @property {number} [veto] The confidence of the Security objection that vetoes the plan, if one does.
 */

export const ROLES = ["analyst", "solution", "critic", "security", "optimizer"];
export const START_RATING = { rating: 1200, matches: 0, successes: 0 };
const ROLE_WEIGHTS = {
  analyst: 1.0,
  solution: 1.2,
  critic: 1.5,
  security: 2.0,
  optimizer: 0.8,
};
/** A Critic objection above this confidence is a conflict, and a duel the Critic wins. */
const CRITIC_CONFLICT = 0.7;
/** A Security objection at or above this confidence is a conflict that weighs five times more. */
const SECURITY_CONFLICT = 0.8;
const SECURITY_EXTRA_WEIGHT = 5;
const CRITIC_WIN = 10;
const SOLUTION_LOSS = -5;
const SECURITY_WIN = 20;
export const DEFAULT_SETTINGS = {
  consensusTarget: 0.8,
  maxPasses: 3,
  vetoConfidence: 0.9,
  minConsensus: 0.6,
};
export function settingsOf(ctx) {
  const number = (key) => (typeof ctx[key] === "number" ? ctx[key] : DEFAULT_SETTINGS[key]);
  return {
    consensusTarget: number("consensusTarget"),
    maxPasses: number("maxPasses"),
    vetoConfidence: number("vetoConfidence"),
    minConsensus: number("minConsensus"),
  };
}
const clamp = (value, low, high) => Math.min(high, Math.max(low, value));
/** How far an agent's record lends it weight: 0.5 + success rate, in [0.5, 1.5]; 1 untried. */
export const accuracyOf = ({ matches, successes }) =>
  matches === 0 ? 1 : clamp(0.5 + successes / matches, 0.5, 1.5);
export const weightOf = (role, standing) =>
  ROLE_WEIGHTS[role] * clamp(standing.rating / 1200, 0.5, 1.5) * accuracyOf(standing);
/** Each role's latest argument: a re-debate's argument replaces that role's earlier one. */
export function latestByRole(args) {
  const latest = new Map();
  for (const arg of args) latest.set(arg.role, arg);
  return [...latest.values()];
}
/** The weighted vote over each role's latest argument. */
export function tally(args, ratings, settings) {
  let pro = 0;
  let contra = 0;
  const conflicts = [];
  let veto;
  for (const arg of latestByRole(args)) {
    const vote = arg.confidence * weightOf(arg.role, ratings[arg.role] ?? START_RATING);
    if (arg.stance === "pro") {
      pro += vote;
      continue;
    }
    contra += vote;
    if (arg.role === "critic" && arg.confidence > CRITIC_CONFLICT)
      conflicts.push(`critic objects (${arg.confidence}): ${arg.argument}`);
    if (arg.role === "security" && arg.confidence >= SECURITY_CONFLICT) {
      conflicts.push(`security objects (${arg.confidence}): ${arg.argument}`);
      contra += arg.confidence * SECURITY_EXTRA_WEIGHT;
    }
    if (arg.role === "security" && arg.confidence >= settings.vetoConfidence) veto = arg.confidence;
  }
  const total = pro + contra;
  return {
    consensus: total === 0 ? 0 : pro / total,
    pro,
    contra,
    conflicts,
    ...(veto !== undefined && { veto }),
  };
}
/**
 * The multi-pass check: back to Solution while consensus is below the target and passes remain.
 * A veto ends the debate at once: no refinement outvotes it.
 */
export function anotherPass(result, passes, settings) {
  return (
    result.veto === undefined &&
    result.consensus < settings.consensusTarget &&
    passes < settings.maxPasses
  );
}
/** The decision rules: a veto, or consensus below the minimum, rejects; anything else proceeds. */
export function decide(result, settings) {
  if (result.veto !== undefined)
    return {
      decision: "REJECT",
      reason: `security vetoed the plan with confidence ${result.veto} (veto at ${settings.vetoConfidence})`,
    };
  if (result.consensus < settings.minConsensus)
    return {
      decision: "REJECT",
      reason: `consensus ${round(result.consensus)} is below ${settings.minConsensus}`,
    };
  return {
    decision: "PROCEED",
    reason: `consensus ${round(result.consensus)} reaches ${settings.minConsensus} with no veto`,
  };
}
/**
 * The "Elo duels" over every argument of the debate: each Critic objection above 0.7 gives the
 * Critic 10 and takes 5 from Solution; each Security objection at 0.8 or more gives Security 20.
 */
export function duels(args) {
  const change = {};
  const add = (role, points) => {
    change[role] = (change[role] ?? 0) + points;
  };
  for (const arg of args) {
    if (arg.stance !== "contra") continue;
    if (arg.role === "critic" && arg.confidence > CRITIC_CONFLICT) {
      add("critic", CRITIC_WIN);
      add("solution", SOLUTION_LOSS);
    }
    if (arg.role === "security" && arg.confidence >= SECURITY_CONFLICT)
      add("security", SECURITY_WIN);
  }
  return change;
}
export const round = (value) => Math.round(value * 1000) / 1000;
