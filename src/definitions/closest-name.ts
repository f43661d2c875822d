/**
 * The name among `candidates` that `word` is most likely a misspelling of, or undefined when
 * none is close: at most two edits apart (a transposition counts as one, case is ignored), and
 * fewer edits than half the longer name, so that short unrelated names are not matched.
 */
export function closestName(word: string, candidates: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  const lower = word.toLowerCase();
  for (const name of candidates) {
    const distance = editDistance(lower, name.toLowerCase());
    const limit = Math.min(2, Math.floor(Math.max(word.length, name.length) / 2));
    if (distance <= limit && (best === undefined || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/**
 * The optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbouring characters, each one edit (the usual typos).
 */
export function editDistance(a: string, b: string): number {
  let before = Array.from({ length: b.length + 1 }, () => 0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
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
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] ?? 0;
}
