/** `source -> target [event: description]`: one graph transition, as coverage counts it. */
export const edgeKey = (
  source: string,
  target: string,
  event: string,
  description?: string,
): string =>
  `${source} -> ${target} [${event || "always"}${description ? `: ${description}` : ""}]`;
