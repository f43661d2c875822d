import { InvalidArgumentError, Option } from "commander";
/** commander's accumulator for a repeatable option: `--set a=1 --set b=2` → `["a=1", "b=2"]`. */
export const collect = (value: string, previous: readonly string[] = []): string[] => [
  ...previous,
  value,
];

/** `--max-parallel <n>`, for the commands that run a pipeline: the session's parallel stage cap. */
export const maxParallelOption = (): Option =>
  new Option(
    "--max-parallel <n>",
    "at most n LLM, code and command stages work at once, across parallel groups and sub-pipelines (default: no cap)",
  ).argParser(positiveInteger);

/** `--prices <file>`, for the commands that run a pipeline: model prices over the bundled ones. */
export const pricesOption = (): Option =>
  new Option(
    "--prices <file>",
    "model prices (YAML or JSON: <provider>:<model>: {input, output, cachedInput?}, US dollars per million tokens) laid over the bundled ones; kept with the run",
  );

/** commander's parser for an option that takes a whole number, 1 or more. */
export function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new InvalidArgumentError("a whole number, 1 or more");
  return value;
}

/** `--timeout`'s value: seconds, above 0. */
export function positiveSeconds(text: string): number {
  const seconds = Number(text);
  if (!(seconds > 0)) throw new InvalidArgumentError("a number of seconds above 0");
  return seconds;
}

/** `--trace-content`, on the commands that run a pipeline. */
export const TRACE_CONTENT_HELP =
  "when OTEL_* variables turn tracing on: spans carry model replies, the messages sent, tool arguments, questions and answers (off: names, counts and outcomes only)";

/** `--stream-json`, on the commands that run a pipeline. */
export const STREAM_JSON_HELP =
  "print every event of the run as a line of JSON on stdout as it happens, the pieces of streaming model replies too (ModelDelta), then the --json summary";
