/**
 * Where an entry sits in a stage's transcript. Keys are derived from the stage's position
 * (attempt, turn, call), never from a counter, so writing an entry again after a restore
 * overwrites it instead of duplicating it, and sorting the keys gives the transcript's order.
 */
export interface EntryPosition {
  /** 0 for the stage's opening (its system prompt, then the user turn), then the 1-based attempt. */
  attempt: number;
  /** 0 before the attempt's first turn (the retry message), then the 1-based turn. */
  turn: number;
  /** 0 for the model's reply and its synthetic answers, k + 1 for the result of call k. */
  slot: number;
  index: number;
}

/** The padded numbers nearly every key is made of, padded once (a key is made per entry and turn). */
const PADDED = Array.from({ length: 256 }, (_, n) => String(n).padStart(6, "0"));

const pad = (n: number): string => PADDED[n] ?? String(n).padStart(6, "0");

export function transcriptKey({ attempt, turn, slot, index }: EntryPosition): string {
  // Joined: one flat string, where a template makes a tree of pieces that each read flattens.
  return [pad(attempt), pad(turn), pad(slot), pad(index)].join(".");
}

/** Every key of entries the model had seen before turn `turn` of attempt `attempt`. */
export function transcriptCutoff(attempt: number, turn: number): string {
  return transcriptKey({ attempt, turn, slot: 0, index: 0 });
}
