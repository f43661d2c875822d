import { describe, expect, it } from "vitest";
import { MachineCache } from "../../src/compiler/machine-cache.js";
import { pipelineCompiles } from "../../src/compiler/pipeline-machine.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { MemoryJournal } from "../../src/runtime/journal.js";
import { startRun } from "../../src/runtime/run.js";
import { CODE_REVIEW_SCRIPT, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

/** The code-review pipeline; `properties` changes its context schema, and so its definition. */
const codeReview = (id: string, properties: Record<string, unknown> = {}): PipelineDefinition =>
  pipelineOf({
    id,
    context: { type: "object", properties: { task: { type: "string" }, ...properties } },
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

/** A journal that also lists the keys recorded in it. */
class ListedJournal extends MemoryJournal {
  readonly keys: string[] = [];
  override record(key: string, value: unknown): void {
    this.keys.push(key);
    super.record(key, value);
  }
}

/** Runs the pipeline to its end on a host of its own; its audit log and journal. */
async function runOnItsOwnHost(pipeline: PipelineDefinition, runId: string) {
  const journal = new ListedJournal();
  const { host, audit } = harness(CODE_REVIEW_SCRIPT, { journal });
  const started = await startRun(pipeline, { host, runId, task: "rename auth" });
  if (!started.ok) throw started.error;
  const result = await started.value.result;
  return { result, audit, journal };
}

describe("compiled pipeline machines", () => {
  it("are compiled once per definition, however many runs it has", async () => {
    const before = pipelineCompiles();
    for (const runId of ["run-1", "run-2", "run-3"]) {
      const { result } = await runOnItsOwnHost(codeReview("compiled-once"), runId);
      expect(result.status).toBe("done");
    }
    expect(pipelineCompiles() - before).toBe(1);
  });

  it("are compiled again when the definition changes", async () => {
    await runOnItsOwnHost(codeReview("compiled-again"), "run-1");
    const before = pipelineCompiles();
    const changed = codeReview("compiled-again", { ticket: { type: "string" } });
    const { result } = await runOnItsOwnHost(changed, "run-2");
    expect(result.status).toBe("done");
    expect(pipelineCompiles() - before).toBe(1);
  });

  it("are not shared by pipelines equal but for their id", async () => {
    await runOnItsOwnHost(codeReview("named-first"), "run-1");
    const { result, audit } = await runOnItsOwnHost(codeReview("named-second"), "run-2");
    expect(result.status).toBe("done");
    const named = audit.events.flatMap((event) =>
      event.payload.pipelineId === undefined ? [] : [event.payload.pipelineId],
    );
    expect(named.length).toBeGreaterThan(0);
    expect(new Set(named)).toEqual(new Set(["named-second"]));
  });

  it("keep two runs of one cached machine apart while they run at once", async () => {
    const pipeline = codeReview("compiled-shared");
    await runOnItsOwnHost(pipeline, "run-warm");
    const before = pipelineCompiles();
    const [first, second] = await Promise.all([
      runOnItsOwnHost(pipeline, "run-a"),
      runOnItsOwnHost(pipeline, "run-b"),
    ]);
    expect(pipelineCompiles()).toBe(before);
    for (const [run, runId] of [
      [first, "run-a"],
      [second, "run-b"],
    ] as const) {
      expect(run.result.status).toBe("done");
      expect(new Set(run.audit.events.map((event) => event.runId))).toEqual(new Set([runId]));
      expect(run.journal.keys.length).toBeGreaterThan(0);
      expect(run.journal.keys.every((key) => key.split(":")[1]?.startsWith(`${runId}/`))).toBe(
        true,
      );
    }
  });
});

describe("a machine cache", () => {
  it("builds each key once and forgets the least recently used past its capacity", () => {
    const cache = new MachineCache<string>(2);
    const built: string[] = [];
    const get = (key: string) =>
      cache.get(key, () => {
        built.push(key);
        return `machine ${key}`;
      });
    expect(get("a")).toBe("machine a");
    get("b");
    get("a");
    get("c");
    get("a");
    get("b");
    expect(built).toEqual(["a", "b", "c", "b"]);
    expect(cache.compiles).toBe(4);
  });
});
