import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { MemoryAuditLog } from "../../src/events/audit.js";
import { createRunInspector } from "../../src/inspect/stream.js";
import { resolveModelSpec } from "../../src/models/index.js";
import { createHost } from "../../src/runtime/host.js";
import { startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { pausableStreams } from "./paused-streams.js";
import { MACHINES_DIR } from "./pipeline-files.js";

/** What plan says first, before its calls: a reply of several pieces. */
export const PLAN_SAYS =
  "I will read the callers of auth first, then rename it everywhere it is used, and run the tests.";

/**
 * code-review whose plan first replies in text (its pieces streamed, held at the test's pause),
 * run in this process with its stream going to an inspect server over `createRunInspector`.
 */
export async function codeReviewSaying(project: string) {
  const bundled = parse(readFileSync(join(MACHINES_DIR, "code-review.script.yaml"), "utf8"));
  bundled.stages.plan.unshift({ text: PLAN_SAYS });
  const script = join(project, "saying.script.yaml");
  writeFileSync(script, stringify(bundled));
  const pipeline = await loadPipelineFile(join(MACHINES_DIR, "code-review.yaml"));
  if (!pipeline.ok) throw new Error(JSON.stringify(pipeline.diagnostics));
  const model = await resolveModelSpec(`scripted:${script}`);
  if (!model.ok) throw model.error;
  const paused = pausableStreams(model.value);
  const store = SqliteStore.open(join(project, "runs.db"));
  if (!store.ok) throw store.error;
  const host = createHost({
    model: paused.handle,
    audit: new MemoryAuditLog(),
    root: project,
    store: store.value,
  });
  return {
    pauseBefore: paused.pauseBefore,
    start: async (runId: string, streamUrl: string) => {
      const stream = createRunInspector(streamUrl);
      const run = await startRun(pipeline.value, {
        host,
        runId,
        task: "rename auth",
        inspect: stream.inspect,
      });
      return { run, stream };
    },
    close: () => store.value.close(),
  };
}
