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

/**
 * The keys of the positions nearly every stage has (its first attempts' first turns and calls),
 * each made once and shared: an in-memory transcript keeps a key per entry for the host's life,
 * and every stage's entries sit at the same few positions. At most 4 × 128 × 8 × 4 keys.
 */
const sharedKeys = new Map<number, string>();

const isSmall = (n: number, below: number): boolean => Number.isInteger(n) && n >= 0 && n < below;

export function transcriptKey(position: EntryPosition): string {
  const { attempt, turn, slot, index } = position;
  if (!(isSmall(attempt, 4) && isSmall(turn, 128) && isSmall(slot, 8) && isSmall(index, 4)))
    return keyOf(position);
  const code = ((attempt * 128 + turn) * 8 + slot) * 4 + index;
  let key = sharedKeys.get(code);
  if (key === undefined) {
    key = keyOf(position);
    sharedKeys.set(code, key);
  }
  return key;
}

/** Joined: one flat string, where a template makes a tree of pieces that each read flattens. */
const keyOf = ({ attempt, turn, slot, index }: EntryPosition): string =>
  [pad(attempt), pad(turn), pad(slot), pad(index)].join(".");

/** Every key of entries the model had seen before turn `turn` of attempt `attempt`. */
export function transcriptCutoff(attempt: number, turn: number): string {
  return transcriptKey({ attempt, turn, slot: 0, index: 0 });
}
