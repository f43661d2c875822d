/** A stage's instructions: text that differs from one stage to another all along. */
const bodyOf = (stage: string, words: number): string =>
  Array.from(
    { length: words },
    (_, i) => `${stage}:${(i * 7919 + stage.length * 104729) % 10007}`,
  ).join(" ");

/**
 * A snapshot like a stage's from turn to turn: a large definition, a few fields that move. A
 * stage named "large-…" has instructions of about 30 kB: a step entering it changes more than a
 * chain of patches carries.
 */
export const snapshotAt = (turn: number, stage = "plan") => ({
  value: { act: turn % 2 === 0 ? "calling" : "dispatch" },
  context: {
    stage: {
      id: stage,
      body: bodyOf(stage, stage.startsWith("large-") ? 3000 : 80),
      tools: ["Lookup"],
    },
    turn,
    batch: [{ proposalId: `run-1/${stage}/1/a1/t${turn}/c0`, args: { key: `${stage}-${turn}` } }],
  },
});
