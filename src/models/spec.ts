import { formatDiagnostic } from "../definitions/diagnostics.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { withoutUrlCredentials } from "../secrets/redact.js";
import {
  type HostedModelOptions,
  type HostedProvider,
  type ModelEnv,
  resolveHostedModel,
} from "./providers.js";
import { createReplayModelFromFile } from "./replay.js";
import { createScriptedModelFromFile } from "./scripted.js";
import type { ModelHandle } from "./types.js";

type Resolve = (
  target: string,
  env: ModelEnv,
  options: HostedModelOptions,
) => Result<ModelHandle> | Promise<Result<ModelHandle>>;

const hosted =
  (provider: HostedProvider): Resolve =>
  (target, env, options) =>
    resolveHostedModel(provider, target, env, options);

/** Each kind of spec: what follows its `:`, its form, and how it becomes a model. */
const KINDS = new Map<string, { names: string; form: string; resolve: Resolve }>([
  ["scripted", { names: "script file", form: "scripted:<file>", resolve: (t) => scripted(t) }],
  ["replay", { names: "cassette", form: "replay:<cassette>", resolve: createReplayModelFromFile }],
  ["openai", { names: "model", form: "openai:<model>", resolve: hosted("openai") }],
  [
    "openai-responses",
    { names: "model", form: "openai-responses:<model>", resolve: hosted("openai-responses") },
  ],
  ["anthropic", { names: "model", form: "anthropic:<model>", resolve: hosted("anthropic") }],
  [
    "openai-compatible",
    {
      names: "base URL and model",
      form: "openai-compatible:<baseURL>#<model>[?tools=false]",
      resolve: hosted("openai-compatible"),
    },
  ],
]);

/** Every kind of `--model` spec, as error messages list them. */
export const MODEL_SPEC_FORMS = [...KINDS.values()].map((kind) => kind.form).join(", ");

/**
 * Resolves a `--model` spec: `scripted:<file>` (the deterministic offline model),
 * `replay:<cassette>`, `openai:<model>`, `openai-responses:<model>`, `anthropic:<model>` or
 * `openai-compatible:<baseURL>#<model>[?tools=false]`. Keys come from `env` (the process
 * environment). A spec is echoed in errors without the credentials of a URL in it.
 */
export async function resolveModelSpec(
  spec: string,
  env: ModelEnv = process.env,
  options: HostedModelOptions = {},
): Promise<Result<ModelHandle>> {
  const at = spec.indexOf(":");
  const kind = at === -1 ? undefined : KINDS.get(spec.slice(0, at));
  if (kind === undefined) {
    return err(
      new StagechartError(
        "Validation/ModelSpecUnsupported",
        `unknown model spec "${withoutUrlCredentials(spec)}"; use ${MODEL_SPEC_FORMS}`,
        { spec: withoutUrlCredentials(spec) },
      ),
    );
  }
  const target = spec.slice(at + 1);
  if (target.trim() === "") {
    return err(
      new StagechartError(
        "Validation/ModelSpecInvalid",
        `the model spec "${withoutUrlCredentials(spec)}" names no ${kind.names}; write ${kind.form}`,
        { spec: withoutUrlCredentials(spec) },
      ),
    );
  }
  return kind.resolve(target, env, options);
}

async function scripted(file: string): Promise<Result<ModelHandle>> {
  const loaded = await createScriptedModelFromFile(file);
  if (loaded.ok) return ok(loaded.value);
  return err(
    new StagechartError(
      "Validation/ScriptInvalid",
      `the scripted model ${file} is invalid:\n${loaded.diagnostics.map(formatDiagnostic).join("\n")}`,
      { diagnostics: loaded.diagnostics },
    ),
  );
}
