export function slugify(text) {
  throw new Error(`slugify is not written yet: ${text}`);
}
