/**
 * JavaScript's string order, by UTF-16 code unit (not bytewise: the two differ for characters
 * past U+FFFF), without a locale: how both stores order transcript keys read back (the order
 * `before` is compared in too), and how definition directories are walked.
 */
export const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
