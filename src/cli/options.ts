import { InvalidArgumentError } from "commander";
/** commander's accumulator for a repeatable option: `--set a=1 --set b=2` → `["a=1", "b=2"]`. */
export const collect = (value: string, previous: readonly string[] = []): string[] => [
  ...previous,
  value,
];

/** commander's parser for an option that takes a whole number, 1 or more. */
export function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new InvalidArgumentError("a whole number, 1 or more");
  return value;
}
