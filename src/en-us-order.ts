/**
 * en-US collation, named rather than the default collator's, which follows the process's locale
 * (LANG): under Danish "aa" sorts after "z". What people read sorted (diagnostics by file) and
 * what a definition's hash sorts its keys by, so both are the same on every machine; en-US is
 * the order hashes stored before it was named were made in. The collator is made at the first
 * comparison, so a command that sorts nothing never sets ICU's up.
 */
let collator: Intl.Collator | undefined;

export const byEnUsCollation = (a: string, b: string): number => {
  collator ??= new Intl.Collator("en-US");
  return collator.compare(a, b);
};
