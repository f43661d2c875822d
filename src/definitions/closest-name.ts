/**
 * The name among `candidates` that `word` is most likely a misspelling of, or undefined when
 * none is close: at most two edits apart (a transposition counts as one, case is ignored), and
 * fewer edits than half the longer name, so that short unrelated names are not matched.
 */
export function closestName(word: string, candidates: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  const lower = word.toLowerCase();
  for (const name of candidates) {
    const limit = Math.min(2, Math.floor(Math.max(word.length, name.length) / 2));
    // Names whose lengths differ by more are more edits apart: not worth comparing.
    if (Math.abs(word.length - name.length) > limit) continue;
    const distance = editDistance(lower, name.toLowerCase(), limit);
    if (distance <= limit && (best === undefined || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/**
 * The optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbouring characters, each one edit (the usual typos). Given a `limit`, a distance past it
 * may be answered as `limit + 1`: the count stops once two rows of the table are past it, since
 * no later row can come back under it.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  let before: number[] = [];
  let previous: number[] = [];
  for (let j = 0; j <= b.length; j++) previous.push(j);
  let previousLeast = 0;
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let least = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        distance = Math.min(distance, (before[j - 2] ?? 0) + 1);
      current[j] = distance;
      if (distance < least) least = distance;
    }
    if (least > limit && previousLeast > limit) return limit + 1;
    before = previous;
    previous = current;
    previousLeast = least;
  }
  return previous[b.length] ?? 0;
}
