import { it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { testPipeline } from "../../src/testing/test-pipeline.js";
it("try", async () => {
  const loaded = await loadPipelineFile("test/fixtures/map-review/review-files.yaml");
  if (!loaded.ok) { console.log(loaded); return; }
  try {
    for (const cover of ["states", "transitions"] as const) {
      const list = pipelinePaths(loaded.value, { cover });
      console.log(cover, list.paths.length, list.paths.map(p=>p.steps.map(s=>`${s.stage}:${s.outcome}`).join(" > ")+" => "+p.end).join("\n"), JSON.stringify(list.untaken ?? []));
    }
    const report = await testPipeline(loaded.value, {});
    console.log(JSON.stringify(report.paths.filter(p=>!p.ok), null, 1), report.passed, report.failed, JSON.stringify(report.coverage).slice(0, 2000));
  } catch (e) { console.log((e as any).code, (e as Error).stack); }
}, 120000);
