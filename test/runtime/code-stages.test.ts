import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { code, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** A code stage that counts its runs in memory, and says what the count was before. */
const counting = pipelineOf({
  id: "counting",
  stages: [
    code("count", ({ memory }) => {
      const before = (memory.recall("counting", "runs") as number | undefined) ?? 0;
      memory.remember("counting", "runs", before + 1);
      return { verdict: "ok", output: { before } };
    }),
  ],
});

async function countOnce(host: ReturnType<typeof harness>["host"], store?: SqliteStore) {
  const started = startRun(counting, { host, ...(store && { store }) });
  if (!started.ok) throw started.error;
  return (await started.value.result).output;
}

describe("a code stage's memory", () => {
  it("is the run store's in a durable run, so the next run on that store recalls it", async () => {
    const file = join(tempDir(), "runs.db");
    const open = () => {
      const opened = SqliteStore.open(file);
      if (!opened.ok) throw opened.error;
      return opened.value;
    };
    const first = open();
    expect(await countOnce(harness("stages: {}").host, first)).toEqual({ before: 0 });
    first.close();
    const second = open();
    expect(await countOnce(harness("stages: {}").host, second)).toEqual({ before: 1 });
    expect(second.recall("counting", "runs")).toBe(2);
    second.close();
  });

  it("is the host's own without a store: it lasts as long as the host", async () => {
    const { host } = harness("stages: {}");
    expect(await countOnce(host)).toEqual({ before: 0 });
    expect(await countOnce(host)).toEqual({ before: 1 });
    expect(await countOnce(harness("stages: {}").host)).toEqual({ before: 0 });
  });
});
