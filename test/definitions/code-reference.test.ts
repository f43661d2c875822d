import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeDrift, fingerprint } from "../../src/compiler/definition-hash.js";
import { loadPipelineFile, validatePaths } from "../../src/definitions/index.js";
import { loaded, placesOf, positionOf } from "../support/pipeline-files.js";
import { seedPlan, tempDir } from "../support/stages.js";

/** A pipeline of two code stages, a guard, a hook-free run and onTransition, all by reference. */
const PIPELINE = `id: checked
entry: prepare
stages:
  prepare: { code: ./code/steps.js#prepare }
  finish: { code: ./code/steps.js#finish }
next:
  prepare:
    - { when: { guard: ready }, to: finish }
    - { to: fail }
guards:
  ready: ./code/steps.js#ready
onTransition: ./code/steps.js#told
`;

const STEPS = `import { label } from "./label.js";
export const prepare = () => ({ verdict: "ok", output: { label: label() } });
export const finish = () => ({ verdict: "ok" });
export const ready = (facts) => facts.output?.label === "ready";
export const told = () => {};
export const limit = 3;
`;

/** machines/p.yaml of a fresh directory, with its modules under machines/code/. */
function project(yaml: string, files: Record<string, string> = {}): string {
  const dir = tempDir();
  const all = {
    "machines/p.yaml": yaml,
    "machines/code/steps.js": STEPS,
    "machines/code/label.js": `export const label = () => "ready";\n`,
    ...files,
  };
  for (const [name, text] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const loadIn = (dir: string) => loadPipelineFile(join(dir, "machines/p.yaml"));

describe("code references in a YAML pipeline (./module.js#export)", () => {
  it("puts the module's exported functions where the pipeline names them: code stages, guards, onTransition", async () => {
    const dir = project(PIPELINE);
    const pipeline = loaded(await loadIn(dir));
    const steps = await import(join(dir, "machines/code/steps.js"));
    expect(pipeline.stages.prepare).toEqual({ kind: "code", id: "prepare", run: steps.prepare });
    expect(pipeline.stages.finish).toEqual({ kind: "code", id: "finish", run: steps.finish });
    expect(pipeline.guards).toEqual({ ready: steps.ready });
    expect(pipeline.onTransition).toBe(steps.told);
    expect(Object.keys(pipeline.codeModules ?? {})).toEqual(["./code/steps.js"]);
  });

  it("takes gate, assert, exit and refuseCompletion hooks of an LLM stage", async () => {
    const dir = project(
      `id: hooked
context: { type: object, properties: { task: { type: string } } }
entry: plan
stages:
  plan: { file: ../stages/plan.md }
hooks:
  plan: { gate: ./code/hooks.js#gate, assert: ./code/hooks.js#assert, exit: ./code/hooks.js#exit }
`,
      {
        "machines/code/hooks.js": `export const gate = () => "proceed";
export const assert = () => ({ verdict: "ok" });
export const exit = ({ parsed }) => parsed;
`,
        "stages/plan.md": seedPlan,
      },
    );
    const pipeline = loaded(await loadIn(dir));
    const hooks = await import(join(dir, "machines/code/hooks.js"));
    expect(pipeline.hooks).toEqual({
      plan: { gate: hooks.gate, assert: hooks.assert, exit: hooks.exit },
    });
  });

  it("refuses a module outside the pipeline file's directory, by path or through a link", async () => {
    const yaml = PIPELINE.replace("./code/steps.js#prepare", "../outside.js#prepare").replace(
      "./code/steps.js#finish",
      "./linked/steps.js#finish",
    );
    const dir = project(yaml, { "outside.js": STEPS, "elsewhere/steps.js": STEPS });
    symlinkSync(join(dir, "elsewhere"), join(dir, "machines/linked"));
    const result = await loadIn(dir);
    expect(result.ok).toBe(false);
    expect(placesOf(dir, result)).toEqual([
      `machines/p.yaml:${positionOf(yaml, "code: ../outside")} Validation/CodeReferenceOutsideRoot`,
      `machines/p.yaml:${positionOf(yaml, "code: ./linked")} Validation/CodeReferenceOutsideRoot`,
    ]);
  });

  it("names what is wrong: no such export, an export that is no function, no such module, a module that throws, a malformed reference", async () => {
    const dir = project(
      `id: broken
entry: a
stages:
  a: { code: ./code/steps.js#missing }
  b: { code: ./code/steps.js#limit }
  c: { code: ./code/gone.js#run }
  d: { code: ./code/throws.js#run }
  e: { code: code/steps.js }
  f: { code: 5 }
next: { a: b, b: c, c: d, d: e, e: f }
`,
      { "machines/code/throws.js": `throw new Error("not today");\nexport const run = 1;\n` },
    );
    const result = await loadIn(dir);
    if (result.ok) throw new Error("expected the load to fail");
    expect(result.diagnostics.map((d) => `${d.line} ${d.code} ${d.message}`)).toEqual([
      '4 Validation/CodeExportMissing stages.a.code: ./code/steps.js has no export "missing"; its functions are prepare, finish, ready, told',
      "5 Validation/CodeExportNotFunction stages.b.code: ./code/steps.js#limit is a number, not a function",
      "6 Validation/CodeModuleUnloadable stages.c.code: ./code/gone.js cannot be loaded: there is no such file",
      "7 Validation/CodeModuleUnloadable stages.d.code: ./code/throws.js cannot be loaded: not today",
      '8 Validation/CodeReferenceInvalid stages.e.code: must be a code reference: ./<module>.js#<export> (or .mjs), relative to the pipeline file, not "code/steps.js"',
      "9 Validation/CodeReferenceInvalid stages.f.code: must be a code reference: ./<module>.js#<export> (or .mjs), relative to the pipeline file, not a number",
    ]);
  });

  it("reports a missing module as missing, also when the pipeline's directory is reached through a link", async () => {
    const dir = project(PIPELINE.replace("./code/steps.js#finish", "./code/gone.js#finish"));
    const linked = join(tempDir(), "linked");
    symlinkSync(dir, linked);
    const result = await loadIn(linked);
    if (result.ok) throw new Error("expected the load to fail");
    expect(result.diagnostics.map((d) => d.code)).toEqual(["Validation/CodeModuleUnloadable"]);
  });

  it("makes a changed module a changed definition, a module it imports included", async () => {
    const dir = project(PIPELINE);
    const before = fingerprint(loaded(await loadIn(dir)));
    writeFileSync(join(dir, "machines/code/label.js"), `export const label = () => "steady";\n`);
    const after = fingerprint(loaded(await loadIn(dir)));
    expect(after.hash).not.toBe(before.hash);
    expect(describeDrift(before.parts, after.parts)).toEqual(["code modules changed"]);
  });

  it("validate reports the references of every pipeline it is given, and skips the modules themselves", async () => {
    const dir = project(PIPELINE.replace("#finish", "#finished"));
    mkdirSync(join(dir, "machines/empty"));
    const report = await validatePaths([join(dir, "machines")]);
    expect(report.files).toEqual([join(dir, "machines/p.yaml")]);
    expect(report.diagnostics.map((d) => d.code)).toEqual(["Validation/CodeExportMissing"]);
  });

  it("loads the structure only with importCode: false: no module is imported, each reference a stand-in that refuses to run", async () => {
    const dir = project(PIPELINE, {
      "machines/code/label.js": `import { writeFileSync } from "node:fs";
writeFileSync(new URL("./imported", import.meta.url), "yes");
export const label = () => "ready";
`,
    });
    const drawn = loaded(
      await loadPipelineFile(join(dir, "machines/p.yaml"), { importCode: false }),
    );
    expect(existsSync(join(dir, "machines/code/imported"))).toBe(false);
    expect(Object.keys(drawn.stages)).toEqual(["prepare", "finish"]);
    const prepare = drawn.stages.prepare;
    expect(prepare?.kind === "code" && prepare.run.name).toBe("steps.js#prepare");
    expect(() => drawn.guards.ready?.({} as never)).toThrow(/not imported/);

    const imported = loaded(await loadIn(dir));
    expect(existsSync(join(dir, "machines/code/imported"))).toBe(true);
    expect(drawn.codeModules).toEqual(imported.codeModules);
  });
});
