/** commander's accumulator for a repeatable option: `--set a=1 --set b=2` → `["a=1", "b=2"]`. */
export const collect = (value: string, previous: readonly string[] = []): string[] => [
  ...previous,
  value,
];
