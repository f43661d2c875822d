import { err, ok, type Result, StagechartError } from "../errors.js";
import { isHostedProvider, type ModelEnv, resolveHostedModel } from "./providers.js";
import { createReplayModelFromFile } from "./replay.js";
import { createScriptedModelFromFile } from "./scripted.js";
import type { ModelHandle } from "./types.js";

/**
 * Resolves a `--model` spec: `scripted:<file>` (the deterministic offline model),
 * `replay:<cassette>`, `openai:<model>`, `anthropic:<model>` or
 * `openai-compatible:<baseURL>#<model>`. Keys come from `env` (the process environment).
 */
export async function resolveModelSpec(
  spec: string,
  env: ModelEnv = process.env,
): Promise<Result<ModelHandle>> {
  const at = spec.indexOf(":");
  const kind = at === -1 ? spec : spec.slice(0, at);
  const target = at === -1 ? "" : spec.slice(at + 1);
  if (target !== "") {
    if (kind === "scripted") return scripted(target);
    if (kind === "replay") return createReplayModelFromFile(target);
    if (isHostedProvider(kind)) return resolveHostedModel(kind, target, env);
  }
  return err(
    new StagechartError(
      "Validation/ModelSpecUnsupported",
      `unknown model spec "${spec}"; use scripted:<file>, replay:<cassette>, openai:<model>, anthropic:<model> or openai-compatible:<baseURL>#<model>`,
      { spec },
    ),
  );
}

async function scripted(file: string): Promise<Result<ModelHandle>> {
  const loaded = await createScriptedModelFromFile(file);
  if (loaded.ok) return ok(loaded.value);
  const problems = loaded.diagnostics.map(
    (d) => `${d.file}:${d.line}:${d.column} ${d.code} ${d.message}`,
  );
  return err(
    new StagechartError(
      "Validation/ScriptInvalid",
      `the scripted model ${file} is invalid:\n${problems.join("\n")}`,
      {
        diagnostics: loaded.diagnostics,
      },
    ),
  );
}
