import { cpSync, existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleDefinition, loadBundle, materialiseBundle } from "../../src/bundles/index.js";
import { fingerprint } from "../../src/compiler/definition-hash.js";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { loadWorkflowPipeline } from "../../src/definitions/pi-workflows/index.js";
import type { Result } from "../../src/errors.js";
import { releaseRoot } from "../support/pi-workflows.js";
import { loaded, MACHINES_DIR } from "../support/pipeline-files.js";
import { STAGES_DIR, tempDir } from "../support/stages.js";

/** A fresh checkout of the bundled YAML pipelines and their stages. */
function checkout(): string {
  const dir = tempDir();
  cpSync(MACHINES_DIR, join(dir, "machines"), { recursive: true });
  cpSync(STAGES_DIR, join(dir, "stages"), { recursive: true });
  return dir;
}

function value<T>(result: Result<T>): T {
  if (!result.ok) throw result.error;
  return result.value;
}

function errorOf<T>(result: Result<T>) {
  if (result.ok) throw new Error("expected an error");
  return result.error;
}

describe("a definition's bundle", () => {
  it.each(["code-review", "code-review-parallel"])(
    "of %s holds its pipeline file and stage files, and loads back into the same definition",
    async (name) => {
      const dir = checkout();
      const pipeline = loaded(await loadPipelineFile(join(dir, "machines", `${name}.yaml`)));
      const { hash, bundle } = value(await bundleDefinition(pipeline));
      expect(hash).toBe(fingerprint(pipeline).hash);
      expect(bundle.entry).toBe(`machines/${name}.yaml`);
      expect(Object.keys(bundle.files)).toContain("stages/review.md");
      expect(Object.keys(bundle.files).every((path) => /^(machines|stages)\//.test(path))).toBe(
        true,
      );

      // The checkout changes after the run was queued: the stored definition does not.
      writeFileSync(join(dir, "stages", "review.md"), "---\nbroken\n");
      const cache = tempDir();
      const back = value(await loadBundle(hash, bundle, { cacheDir: cache }));
      expect(fingerprint(back).hash).toBe(hash);
      const [folder] = readdirSync(cache).filter((name) => name.startsWith(`${hash}-`));
      const written = join(cache, folder as string, "stages", "review.md");
      expect(statSync(written).mode & 0o222).toBe(0);
    },
  );

  it("of a pi-workflows workflow holds it and the workflows it uses, in their root", async () => {
    const root = releaseRoot();
    const pipeline = loaded(await loadWorkflowPipeline(join(root, "release")));
    const { hash, bundle } = value(await bundleDefinition(pipeline));
    expect(bundle.entry).toBe("release");
    expect(Object.keys(bundle.files)).toEqual(
      expect.arrayContaining(["release/workflow.yaml", "code-review/workflow.yaml"]),
    );
    expect(Object.keys(bundle.files).some((path) => path.endsWith(".script.yaml"))).toBe(false);
    const back = value(await loadBundle(hash, bundle, { cacheDir: tempDir() }));
    expect(fingerprint(back).hash).toBe(hash);
  });

  it.each(["task-lifecycle", "arena-debate"])(
    "of %s carries the code modules it names and what they import, and loads back the same",
    async (name) => {
      const dir = checkout();
      const pipeline = loaded(await loadPipelineFile(join(dir, "machines", `${name}.yaml`)));
      const { hash, bundle } = value(await bundleDefinition(pipeline));
      const modules = Object.keys(bundle.files).filter((path) => path.endsWith(".js"));
      expect(modules.length).toBeGreaterThan(0);
      expect(modules.every((path) => path.startsWith(`machines/${name}/`))).toBe(true);

      const back = value(await loadBundle(hash, bundle, { cacheDir: tempDir() }));
      expect(fingerprint(back).hash).toBe(hash);
    },
  );

  it("is refused for a pipeline built in code rather than loaded from a file, with a code", async () => {
    const pipeline = loaded(
      await loadPipelineFile(join(checkout(), "machines", "code-review.yaml")),
    );
    const { file: _file, ...builtInCode } = pipeline;
    expect(errorOf(await bundleDefinition(builtInCode)).code).toBe(
      "Validation/DefinitionNotBundlable",
    );
  });

  it("that loads into another definition than its hash says is refused", async () => {
    const dir = checkout();
    const pipeline = loaded(await loadPipelineFile(join(dir, "machines", "code-review.yaml")));
    const { hash, bundle } = value(await bundleDefinition(pipeline));
    const plan = bundle.files["stages/plan.md"] as string;
    const edited = { ...bundle, files: { ...bundle.files, "stages/plan.md": `${plan}\nMore.\n` } };
    expect(errorOf(await loadBundle(hash, edited, { cacheDir: tempDir() }))).toMatchObject({
      code: "Session/DefinitionMismatch",
      context: { definitionHash: hash },
    });
  });
});

describe("writing a bundle out", () => {
  it("gives one definition bundled from two layouts a folder each, both loadable", () => {
    const cache = tempDir();
    const files = (dir: string) => ({ [`${dir}/p.yaml`]: "id: p\n", "stages/s.md": "x\n" });
    const machines = materialiseBundle(
      "abc123",
      { entry: "machines/p.yaml", files: files("machines") },
      cache,
    );
    const pipelines = materialiseBundle(
      "abc123",
      { entry: "pipelines/p.yaml", files: files("pipelines") },
      cache,
    );
    expect(machines.ok && pipelines.ok).toBe(true);
    if (!machines.ok || !pipelines.ok) return;
    expect(existsSync(machines.value)).toBe(true);
    expect(existsSync(pipelines.value)).toBe(true);
    expect(readdirSync(cache).filter((name) => name.startsWith("abc123-"))).toHaveLength(2);
    // The same bundle again is the folder already written.
    expect(
      materialiseBundle("abc123", { entry: "machines/p.yaml", files: files("machines") }, cache),
    ).toEqual(machines);
  });

  it.each([
    ["../escape.md", "a path that climbs out"],
    ["stages/../../escape.md", "a path that climbs out midway"],
    ["/tmp/escape.md", "an absolute path"],
  ])("refuses %s (%s) and writes nothing", (path) => {
    const cache = tempDir();
    const bundle = { entry: "p.yaml", files: { "p.yaml": "id: p\n", [path]: "x" } };
    expect(errorOf(materialiseBundle("abc123", bundle, cache))).toMatchObject({
      code: "Validation/DefinitionPathUnsafe",
      context: { path },
    });
    expect(readdirSync(cache)).toEqual([]);
    expect(existsSync(join(cache, "escape.md"))).toBe(false);
  });

  it.each([
    [
      "a file that is a folder",
      { "p.yaml": "", stages: "x", "stages/plan.md": "y" },
      "stages/plan.md",
    ],
    ["the other way round", { "stages/plan.md": "y", "p.yaml": "", stages: "x" }, "stages/plan.md"],
    [
      "one file twice",
      { "p.yaml": "", "stages/plan.md": "y", "stages/./plan.md": "z" },
      "stages/./plan.md",
    ],
  ])("refuses a bundle whose paths clash (%s) and writes nothing", (_, files, path) => {
    const cache = tempDir();
    expect(errorOf(materialiseBundle("abc123", { entry: "p.yaml", files }, cache))).toMatchObject({
      code: "Validation/DefinitionPathClash",
      context: { path },
    });
    expect(readdirSync(cache)).toEqual([]);
  });

  it("says so when this machine cannot write its cache, naming it", () => {
    const cache = join(tempDir(), "a-file");
    writeFileSync(cache, "not a folder");
    const bundle = { entry: "p.yaml", files: { "p.yaml": "id: p\n" } };
    expect(errorOf(materialiseBundle("abc123", bundle, cache))).toMatchObject({
      code: "Session/DefinitionCacheUnavailable",
      context: { cacheDir: cache },
    });
  });

  it("refuses a hash that is not one", () => {
    const bundle = { entry: "p.yaml", files: { "p.yaml": "id: p\n" } };
    expect(errorOf(materialiseBundle("../up", bundle, tempDir())).code).toBe(
      "Validation/DefinitionPathUnsafe",
    );
  });
});
