import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StageInput, StageResult } from "../../src/compiler/stage-types.js";
import type { StageDefinition } from "../../src/definitions/index.js";
import { parseStageDefinition } from "../../src/definitions/index.js";
import { MemoryAuditLog } from "../../src/events/audit.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { createHost, type Host, type HostOptions } from "../../src/runtime/host.js";
import { STAGES_DIR, tempDir } from "./stages.js";

export function loadStage(
  name: string,
  edit: (text: string) => string = (t) => t,
): StageDefinition {
  const text = edit(readFileSync(join(STAGES_DIR, `${name}.md`), "utf8"));
  const result = parseStageDefinition(text, `${name}.md`);
  if (!result.ok) throw new Error(`stage ${name}: ${JSON.stringify(result.diagnostics)}`);
  return result.value;
}

export interface Harness {
  host: Host;
  audit: MemoryAuditLog;
  root: string;
  /** `type` of every audit event, in order. */
  types(): string[];
}

/** A host on the scripted model and a fresh project directory with `src/auth.ts`. */
export function harness(script: string, options: Partial<HostOptions> = {}): Harness {
  const parsed = parseScript(script, "test.script.yaml");
  if (!parsed.ok) throw new Error(`script: ${JSON.stringify(parsed.diagnostics)}`);
  return modelHarness(createScriptedModel(parsed.value), options);
}

/** A host on any model and a fresh project directory with `src/auth.ts`. */
export function modelHarness(model: ModelHandle, options: Partial<HostOptions> = {}): Harness {
  const root = tempDir();
  mkdirSync(join(root, "src"));
  writeFileSync(join(root, "src/auth.ts"), "export const auth = 'a';\nexport const token = 't';\n");
  const audit = new MemoryAuditLog();
  const host = createHost({ model, audit, root, ...options });
  return { host, audit, root, types: () => audit.events.map((e) => e.type) };
}

/** The Plan stage's result, as the Execute stage receives it. */
export const planResult: StageResult = {
  stageId: "plan",
  stageExecutionId: "run-1/plan/1",
  verdict: "ok",
  parsed: { summary: "Split the module", steps: ["extract", "test"] },
  output: { summary: "Split the module", steps: ["extract", "test"] },
  capHit: false,
  attemptCount: 1,
  modelCalls: 3,
};

export const stageInput = (
  stage: StageDefinition,
  extra: { ctx?: Record<string, unknown>; execution?: number } = {},
): StageInput => ({
  stage,
  runId: "run-1",
  stageExecutionId: `run-1/${stage.id}/${extra.execution ?? 1}`,
  ctx: extra.ctx ?? { task: "refactor auth module" },
  ...(stage.id === "execute" && { upstream: [planResult] }),
});
