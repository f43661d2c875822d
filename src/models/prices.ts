import { parseYamlSource } from "../definitions/yaml-source.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { readRegularText } from "../files.js";
import * as z from "../zod.js";
import { REPLAY_PROVIDER } from "./replay.js";
import { SCRIPTED_PROVIDER } from "./scripted.js";

/**
 * What a model's tokens cost, in US dollars per million tokens: input, output, and input read
 * from the provider's prompt cache (charged as input when a price has no `cachedInput`).
 */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number;
}

/**
 * Prices by model name, `<provider>:<model id>` as a model spec writes it (`openai:gpt-4o`,
 * `anthropic:claude-sonnet-4-5`, `scripted:review.script.yaml`). A name without an entry of its
 * own takes the longest entry it begins with, followed by `-`: `gpt-4o-2024-08-06` is priced as
 * `gpt-4o`, `claude-opus-4-1-20250805` as `claude-opus-4-1`.
 */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** When the bundled prices were read from the providers' price lists. */
export const BUNDLED_PRICES_AS_OF = "2026-11";

/**
 * The providers' list prices for their common models (standard tier, no batch discount), so a
 * run on them shows what it cost without configuration. Prices change: a price file
 * (`--prices`, `createHost({prices})`) overrides or adds entries.
 */
export const BUNDLED_PRICES: PriceTable = {
  "openai:gpt-5": { input: 1.25, cachedInput: 0.125, output: 10 },
  "openai:gpt-5-mini": { input: 0.25, cachedInput: 0.025, output: 2 },
  "openai:gpt-5-nano": { input: 0.05, cachedInput: 0.005, output: 0.4 },
  "openai:gpt-4.1": { input: 2, cachedInput: 0.5, output: 8 },
  "openai:gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 },
  "openai:gpt-4.1-nano": { input: 0.1, cachedInput: 0.025, output: 0.4 },
  "openai:gpt-4o": { input: 2.5, cachedInput: 1.25, output: 10 },
  "openai:gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 },
  "openai:o3": { input: 2, cachedInput: 0.5, output: 8 },
  "openai:o3-mini": { input: 1.1, cachedInput: 0.55, output: 4.4 },
  "openai:o4-mini": { input: 1.1, cachedInput: 0.275, output: 4.4 },
  "openai:o1": { input: 15, cachedInput: 7.5, output: 60 },
  "anthropic:claude-opus-4-5": { input: 5, cachedInput: 0.5, output: 25 },
  "anthropic:claude-opus-4-1": { input: 15, cachedInput: 1.5, output: 75 },
  "anthropic:claude-opus-4": { input: 15, cachedInput: 1.5, output: 75 },
  "anthropic:claude-sonnet-4-5": { input: 3, cachedInput: 0.3, output: 15 },
  "anthropic:claude-sonnet-4": { input: 3, cachedInput: 0.3, output: 15 },
  "anthropic:claude-haiku-4-5": { input: 1, cachedInput: 0.1, output: 5 },
  "anthropic:claude-3-7-sonnet": { input: 3, cachedInput: 0.3, output: 15 },
  "anthropic:claude-3-5-sonnet": { input: 3, cachedInput: 0.3, output: 15 },
  "anthropic:claude-3-5-haiku": { input: 0.8, cachedInput: 0.08, output: 4 },
  "anthropic:claude-3-haiku": { input: 0.25, cachedInput: 0.03, output: 1.25 },
  "anthropic:claude-3-opus": { input: 15, cachedInput: 1.5, output: 75 },
};

/**
 * A model's name as specs and price tables write it: `openai:gpt-4o` for the AI SDK's
 * `openai.chat` or `openai.responses` model `gpt-4o`, `scripted:<model id>` for a script; a
 * replayed model is named as the model its cassette recorded.
 */
export function modelName(model: { provider: string; modelId: string }): string {
  if (model.provider === SCRIPTED_PROVIDER) return `scripted:${model.modelId}`;
  if (model.provider === REPLAY_PROVIDER) {
    const at = model.modelId.indexOf(":");
    if (at > 0) {
      return modelName({
        provider: model.modelId.slice(0, at),
        modelId: model.modelId.slice(at + 1),
      });
    }
  }
  const dot = model.provider.indexOf(".");
  return `${dot === -1 ? model.provider : model.provider.slice(0, dot)}:${model.modelId}`;
}

/** The price of the model `name` in `table`: its own entry, else the longest that prefixes it. */
export function priceOf(table: PriceTable, name: string): ModelPrice | undefined {
  const own = table[name];
  if (own !== undefined) return own;
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (name.startsWith(`${key}-`) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/** The tokens a model call used, as its reply reports them. */
export interface CallTokens {
  inputTokens?: number;
  outputTokens?: number;
  /** Of the input tokens, those read from the provider's prompt cache. */
  cachedInputTokens?: number;
}

/** The model a host calls, by name, and its price when the host's table has one. */
export interface ModelPricing {
  model: string;
  price?: ModelPrice;
}

/** `model` priced from the bundled table with `prices` laid over it. */
export function pricingOf(
  model: { provider: string; modelId: string },
  prices: PriceTable = {},
): ModelPricing {
  const name = modelName(model);
  const price = priceOf({ ...BUNDLED_PRICES, ...prices }, name);
  return price === undefined ? { model: name } : { model: name, price };
}

/** What a call's tokens cost at `price`, in US dollars. */
export function costOf(price: ModelPrice, tokens: CallTokens): number {
  const input = tokens.inputTokens ?? 0;
  const cached = Math.min(tokens.cachedInputTokens ?? 0, input);
  const cachedRate = price.cachedInput ?? price.input;
  return (
    ((input - cached) * price.input +
      cached * cachedRate +
      (tokens.outputTokens ?? 0) * price.output) /
    1_000_000
  );
}

const rate = z
  .number({ error: "must be a number of US dollars per million tokens" })
  .check(z.gte(0, { error: "must not be negative" }));

const priceFileSchema = z.record(
  z.string(),
  z.strictObject({ input: rate, output: rate, cachedInput: z.optional(rate) }),
  { error: "must map model names to {input, output, cachedInput?} prices" },
);

/** A model name as specs write it: `<provider>:<model id>`. */
const MODEL_NAME = /^[a-z][a-z0-9-]*:\S+$/;

/** A price file names a few dozen models; a larger one is refused rather than read whole. */
const MAX_PRICE_FILE_BYTES = 256 * 1024;

/**
 * A price file (YAML or JSON): `<provider>:<model id>: {input, output, cachedInput?}` in US
 * dollars per million tokens, which a host lays over the bundled prices. `Validation/PriceFileInvalid` names
 * the file, the entry and the line of what is wrong.
 */
export function loadPriceFile(file: string): Result<PriceTable> {
  const invalid = (message: string, context: Record<string, unknown> = {}) =>
    err(new StagechartError("Validation/PriceFileInvalid", message, { file, ...context }));
  const read = readRegularText(file, MAX_PRICE_FILE_BYTES);
  if (!read.ok) return invalid(`cannot read the price file ${file}: ${read.why}`);
  const yaml = parseYamlSource(read.text);
  if (!yaml.ok) {
    const [first] = yaml.problems;
    return invalid(
      `the price file ${file} is not valid YAML or JSON${first ? ` (line ${first.line}): ${first.message}` : ""}`,
    );
  }
  const data = yaml.value.data ?? {};
  const problem = (path: (string | number)[], message: string) => {
    const where =
      path.length > 0 ? `${path.join(".")} (line ${yaml.value.locate(path).line})` : "the file";
    return `${where}: ${message}`;
  };
  const badNames = Object.keys(typeof data === "object" && data !== null ? data : {})
    .filter((name) => !MODEL_NAME.test(name))
    .map((name) =>
      problem([name], "must name a model as <provider>:<model id>, e.g. openai:gpt-4o"),
    );
  const parsed = priceFileSchema.safeParse(data);
  const problems = [
    ...(parsed.success ? [] : parsed.error.issues).map((issue) =>
      problem(
        issue.path.filter((key) => typeof key !== "symbol"),
        issue.message,
      ),
    ),
    ...badNames,
  ];
  if (problems.length > 0 || !parsed.success)
    return invalid(`the price file ${file} is invalid: ${problems.join("; ")}`, { problems });
  return ok(parsed.data);
}
