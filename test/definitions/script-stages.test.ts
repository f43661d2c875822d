import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { closestName, editDistance } from "../../src/definitions/closest-name.js";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import {
  scriptStageDiagnostics,
  scriptStageProblems,
} from "../../src/definitions/script-stages.js";
import { parseScript, type Script } from "../../src/models/script-file.js";
import { loaded, MACHINES_DIR } from "../support/pipeline-files.js";

const bundled = async (name: string): Promise<PipelineDefinition> =>
  loaded(await loadPipelineFile(join(MACHINES_DIR, `${name}.yaml`)));

const bundledScript = (name: string): string =>
  readFileSync(join(MACHINES_DIR, `${name}.script.yaml`), "utf8");

function script(text: string): Script {
  const parsed = parseScript(text, "s.script.yaml");
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return parsed.value;
}

const messagesOf = (text: string, pipeline: PipelineDefinition) =>
  scriptStageProblems(script(text), pipeline).map(({ severity, code, message }) => ({
    severity,
    code,
    message,
  }));

describe("a script checked against its pipeline", () => {
  it("finds nothing wrong with the bundled code-review script", async () => {
    expect(messagesOf(bundledScript("code-review"), await bundled("code-review"))).toEqual([]);
  });

  it("reports a misspelt stage key as an error naming the stage it is closest to, and the stage left without entries", async () => {
    const text = bundledScript("code-review").replace("\n  review:", "\n  reveiw:");
    expect(messagesOf(text, await bundled("code-review"))).toEqual([
      {
        severity: "error",
        code: "Validation/ScriptStageUnknown",
        message: "script stage reveiw is not a stage of pipeline code-review; did you mean review?",
      },
      {
        severity: "warning",
        code: "Validation/ScriptStageMissing",
        message:
          "the script has no entries for review, a model stage of code-review; a run that reaches it fails there with Validation/ScriptStageMissing",
      },
    ]);
  });

  it("lists the model stages when the key is close to none of them", async () => {
    const text =
      "stages:\n  deploy: [{ text: hi }]\n  plan: [{ text: hi }]\n  execute: [{ text: hi }]\n  review: [{ text: hi }]\n";
    expect(messagesOf(text, await bundled("code-review"))).toEqual([
      expect.objectContaining({
        message:
          "script stage deploy is not a stage of pipeline code-review; its stages that call a model are plan, execute, review",
      }),
    ]);
  });

  it("places the error at the key in the script file", async () => {
    const text = bundledScript("code-review").replace("\n  review:", "\n  reveiw:");
    const line = text.split("\n").findIndex((l) => l.startsWith("  reveiw:")) + 1;
    const [unknown] = scriptStageDiagnostics(script(text), await bundled("code-review"));
    expect(unknown).toMatchObject({ file: "s.script.yaml", line, column: 3, severity: "error" });
  });

  it("takes the stages of sub-pipelines, plain or as pipelineId/stageId, and refuses a key of a stage that calls no model", async () => {
    const arena = await bundled("arena-debate");
    const full = `${bundledScript("arena-debate")}  arena-sandbox/self-heal: [{ text: hi }]\n`;
    expect(messagesOf(full, arena)).toEqual([]);
    expect(messagesOf(`${full}  aggregate: [{ text: hi }]\n`, arena)).toEqual([
      expect.objectContaining({
        severity: "error",
        message:
          "script stage aggregate is a code stage of pipeline arena-debate or its sub-pipelines: it calls no model, so its entries would never be read",
      }),
    ]);
    expect(messagesOf(`${full}  arena-sandbox/self-heel: [{ text: hi }]\n`, arena)).toEqual([
      expect.objectContaining({
        message:
          "script stage arena-sandbox/self-heel is not a stage of pipeline arena-debate or its sub-pipelines; did you mean arena-sandbox/self-heal?",
      }),
    ]);
    const withoutSelfHeal = bundledScript("arena-debate").replace(
      /\n {2}# Never reached[^\n]*\n {2}self-heal: \[\]/,
      "",
    );
    expect(messagesOf(bundledScript("arena-debate"), arena)).toEqual([]);
    expect(messagesOf(withoutSelfHeal, arena)).toEqual([
      expect.objectContaining({
        severity: "warning",
        message:
          "the script has no entries for self-heal (in sub-pipeline arena-sandbox), a model stage of arena-debate; a run that reaches it fails there with Validation/ScriptStageMissing",
      }),
    ]);
  });

  it("checks answers keys against the ask stages", async () => {
    const lifecycle = await bundled("task-lifecycle");
    const text = bundledScript("task-lifecycle");
    expect(messagesOf(text, lifecycle)).toEqual([]);
    expect(messagesOf(text.replace("\n  accept:", "\n  acept:"), lifecycle)).toEqual([
      expect.objectContaining({
        severity: "error",
        message:
          "answers key acept is not an ask stage of pipeline task-lifecycle; did you mean accept?",
      }),
    ]);
    expect(messagesOf(`${text}  planning: [yes]\n`, lifecycle)).toEqual([
      expect.objectContaining({
        message:
          "answers key planning is a model stage of pipeline task-lifecycle; answers are for ask stages (model replies go under stages)",
      }),
    ]);
  });
});

describe("the closest name", () => {
  it("counts a swap of neighbours as one edit and ignores case", () => {
    expect(editDistance("konz", "cons")).toBe(2);
    expect(editDistance("reveiw", "review")).toBe(1);
    expect(closestName("konz", ["plan", "cons", "critic"])).toBe("cons");
    expect(closestName("TurnCap", ["turnCap", "name"])).toBe("turnCap");
  });

  it("given a limit, counts exactly up to it and answers past it with a distance past it", () => {
    const word = fc.string({ unit: fc.constantFrom(..."abcAB"), maxLength: 9 });
    fc.assert(
      fc.property(word, word, fc.nat(4), (a, b, limit) => {
        const distance = editDistance(a, b);
        const bounded = editDistance(a, b, limit);
        if (distance <= limit) expect(bounded).toBe(distance);
        else expect(bounded).toBeGreaterThan(limit);
      }),
      { numRuns: 2000 },
    );
    expect(editDistance("piworkflow", "retrypolicy", 2)).toBe(3);
  });

  it("suggests nothing for an unrelated name, or a short one two edits away", () => {
    expect(closestName("owner", ["id", "name", "tags", "turnCap"])).toBeUndefined();
    expect(closestName("ab", ["cd"])).toBeUndefined();
  });
});
