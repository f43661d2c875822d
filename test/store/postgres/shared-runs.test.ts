import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/inspect/audit.js";
import { parseScript } from "../../../src/models/script-file.js";
import { createScriptedModel } from "../../../src/models/scripted.js";
import { startRun } from "../../../src/runtime/run.js";
import { SqliteStore } from "../../../src/store/index.js";
import { startSharedRun } from "../../../src/store/postgres/shared-runs.js";
import { harness, modelHarness } from "../../support/stage-harness.js";
import { tempDir } from "../../support/stages.js";
import {
  bundledCodeReview,
  codeReviewScript,
  noPostgres,
  sharedStores,
} from "./support/shared-store.js";

const stores = sharedStores();
const task = "refactor auth module";

/** What tells two audit logs apart in shape: each event's type and stage, in order. */
const shapeOf = (events: AuditEvent[]) =>
  events.map((event) => `${event.type}${event.stageId ? `@${event.stageId}` : ""}`);

describe.skipIf(noPostgres)("a durable run on the shared PostgreSQL store", () => {
  it("runs the bundled code-review pipeline to done, its audit log shaped as on SQLite", async () => {
    const pipeline = await bundledCodeReview();
    const onSqlite = SqliteStore.open(join(tempDir(), "runs.db"));
    if (!onSqlite.ok) throw onSqlite.error;
    const local = startRun(pipeline, {
      host: harness(codeReviewScript()).host,
      store: onSqlite.value,
      runId: "review-1",
      task,
    });
    if (!local.ok) throw local.error;
    expect((await local.value.result).status).toBe("done");

    const { store } = await stores.fresh();
    const shared = await startSharedRun(pipeline, {
      host: harness(codeReviewScript()).host,
      store,
      runId: "review-1",
      task,
    });
    if (!shared.ok) throw shared.error;
    const result = await shared.value.result;
    expect(result.status).toBe("done");

    const stored = await store.auditOf("review-1");
    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index + 1));
    expect(shapeOf(stored)).toEqual(shapeOf(onSqlite.value.auditOf("review-1")));
    expect(stored.at(-1)?.type).toBe("RunCompleted");
    const run = await store.getRun("review-1");
    expect(run.ok && run.value.status).toBe("done");
    expect(await store.leaseHolder("review-1")).toBeUndefined();
    onSqlite.value.close();
  });

  it("makes no model call before every step that led to it is stored", async () => {
    const { store } = await stores.fresh();
    const parsed = parseScript(codeReviewScript(), "code-review.script.yaml");
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
    const scripted = createScriptedModel(parsed.value);
    const asked: string[] = [];
    const unstoredAtCall: string[][] = [];
    const model = {
      ...scripted,
      model: {
        ...scripted.model,
        doGenerate: async (options: Parameters<typeof scripted.model.doGenerate>[0]) => {
          const stored = new Set((await store.journalOf("review-2")).map((row) => row.key));
          unstoredAtCall.push(asked.filter((key) => !stored.has(key)));
          const call = options.providerOptions?.stagechart as Record<string, unknown>;
          asked.push(`model:review-2/${call.stageExecutionId}/${call.position}`);
          return scripted.model.doGenerate(options);
        },
      },
    };
    const shared = await startSharedRun(await bundledCodeReview(), {
      host: modelHarness(model as typeof scripted).host,
      store,
      runId: "review-2",
      task,
    });
    if (!shared.ok) throw shared.error;
    expect((await shared.value.result).status).toBe("done");
    expect(asked.length).toBeGreaterThan(3);
    expect(unstoredAtCall).toEqual(asked.map(() => []));
  });
});
