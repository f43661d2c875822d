/**
 * How both stores order transcript keys read back: JavaScript's string order, by UTF-16 code
 * unit (not bytewise: the two differ for characters past U+FFFF), the order `before` is
 * compared in too.
 */
export const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
