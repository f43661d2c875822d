import { err, ok, type Result, StagechartError } from "../errors.js";
import { createScriptedModelFromFile } from "./scripted.js";
import type { ModelHandle } from "./types.js";

/** Resolves a `--model` spec; `scripted:<file>` is the deterministic offline model. */
export async function resolveModelSpec(spec: string): Promise<Result<ModelHandle>> {
  const [kind, ...rest] = spec.split(":");
  const target = rest.join(":");
  if (kind === "scripted" && target) return scripted(target);
  return err(
    new StagechartError(
      "Validation/ModelSpecUnsupported",
      `unknown model spec "${spec}"; this version runs scripted:<file> (hosted providers are not wired yet)`,
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
