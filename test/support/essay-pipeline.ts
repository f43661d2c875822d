import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { loadPipelineFile } from "../../src/index.js";
import { tempDir } from "./stages.js";

/** An LLM stage file with no tools, completing with `schema`. */
const stage = (
  id: string,
  schema: string,
  retries = "{ maxAttempts: 1, backoff: none }",
  turnCap = 3,
) =>
  `---
id: ${id}
name: ${id}
description: The ${id} step of the essay.
allowedTools: []
completionTool: submit_${id}
completionSchema:
${schema}
retryPolicy: ${retries}
turnCap: ${turnCap}
resolutionPolicy: fail
---
Do the ${id} step for {{ctx.task}}.
`;

const CLEAN = `  type: object
  required: [clean]
  additionalProperties: false
  properties:
    clean: { type: boolean }`;

/**
 * A pipeline unlike the bundled ones, of the shapes model-based testing must cover: an `in`
 * condition to fail (outline), a numeric threshold either way and a loop bounded by `visits`
 * (draft, whose two attempts of four turns can run out: `retries-exhausted` fails it, as its
 * rule to fail does), and an `all-settled` fan-out (polish → grammar, style → publish).
 */
export const ESSAY_YAML = `id: essay
context:
  type: object
  required: [task]
  properties:
    task: { type: string, minLength: 1 }
entry: outline
stages:
  outline: { file: stages/outline.md }
  draft: { file: stages/draft.md }
  polish: { file: stages/polish.md }
  grammar: { file: stages/grammar.md }
  style: { file: stages/style.md }
  publish: { file: stages/publish.md }
next:
  outline:
    - { when: { path: output.kind, in: [spam] }, to: fail }
    - { to: draft }
  draft:
    - { when: { path: output.score, lt: 2 }, to: fail }
    - { when: { path: output.score, gte: 7 }, to: polish }
    - { when: { visits: draft, lt: 3 }, to: draft }
    - { to: fail }
  polish: { parallel: [grammar, style], join: publish, policy: all-settled }
`;

const STAGES: Record<string, string> = {
  outline: stage(
    "outline",
    `  type: object
  required: [kind, sections]
  additionalProperties: false
  properties:
    kind: { enum: [essay, poem, spam] }
    sections: { type: integer, minimum: 1, maximum: 9 }`,
  ),
  draft: stage(
    "draft",
    `  type: object
  required: [score, text]
  additionalProperties: false
  properties:
    score: { type: number, minimum: 0, maximum: 10 }
    text: { type: string, minLength: 1 }`,
    "{ maxAttempts: 2, backoff: none }",
    4,
  ),
  polish: stage("polish", CLEAN),
  grammar: stage("grammar", CLEAN),
  style: stage("style", CLEAN),
  publish: stage("publish", CLEAN),
};

/** The essay pipeline's file in a fresh project, its YAML edited by `edit`. */
export function essayFile(edit: (yaml: string) => string = (yaml) => yaml): string {
  const dir = tempDir();
  mkdirSync(join(dir, "stages"));
  for (const [id, text] of Object.entries(STAGES))
    writeFileSync(join(dir, `stages/${id}.md`), text);
  writeFileSync(join(dir, "essay.yaml"), edit(ESSAY_YAML));
  return join(dir, "essay.yaml");
}

/** The essay pipeline, loaded from a fresh project. */
export async function essayPipeline(
  edit: (yaml: string) => string = (yaml) => yaml,
): Promise<PipelineDefinition> {
  const loaded = await loadPipelineFile(essayFile(edit));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value;
}
