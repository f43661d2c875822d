import { describe, expect, it } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { VERSION } from "../../src/version.js";
import { failure, manualClock, newRun, okValue, tempStore } from "./support/temp-store.js";

describe("runs", () => {
  it("creates a run as running, stamped with the clock and the stagechart version", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    const created = okValue(store.createRun(newRun("run-1")));

    expect(created).toEqual({
      runId: "run-1",
      pipelineId: "plan-build",
      status: "running",
      createdAt: "2030-01-01T00:00:00.000Z",
      updatedAt: "2030-01-01T00:00:00.000Z",
      definitionHash: "hash-1",
      stagechartVersion: VERSION,
      options: { pipelineFile: "machines/plan-build.yaml", model: "scripted:plan.script.yaml" },
    });
    expect(okValue(store.getRun("run-1"))).toEqual(created);
  });

  it("refuses a second run with the same id", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const error = failure(store.createRun(newRun("run-1", { pipelineId: "other" })));
    expect(error.code).toBe("Session/RunExists");
    expect(okValue(store.getRun("run-1")).pipelineId).toBe("plan-build");
  });

  it.each(["", "run/1"])("refuses the run id %j, whose prefix would be ambiguous", (runId) => {
    const { store } = tempStore();
    expect(failure(store.createRun(newRun(runId))).code).toBe("Validation/RunIdInvalid");
    expect(store.listRuns()).toEqual([]);
  });

  it("updates status, error and output, and moves updatedAt", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-1"));
    clock.advance(1000);
    const error = new StagechartError("ToolTerminal/ToolCrashed", "the tool broke").toModelView();

    const failed = okValue(store.updateRun("run-1", { status: "failed", error }));
    expect(failed).toMatchObject({
      status: "failed",
      error,
      updatedAt: "2030-01-01T00:00:01.000Z",
    });
    expect(failed.createdAt).toBe("2030-01-01T00:00:00.000Z");

    const done = okValue(store.updateRun("run-1", { status: "done", error: undefined, output: 7 }));
    expect(done).not.toHaveProperty("error");
    expect(okValue(store.getRun("run-1"))).toEqual(done);
    expect(done).toMatchObject({ status: "done", output: 7, definitionHash: "hash-1" });
  });

  it("reports an unknown run as RunNotFound", () => {
    const { store } = tempStore();
    expect(failure(store.getRun("nope")).code).toBe("Session/RunNotFound");
    expect(failure(store.updateRun("nope", { status: "done" })).code).toBe("Session/RunNotFound");
  });

  it("lists runs newest first, the later of two created in the same millisecond first", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-a"));
    clock.advance(5);
    store.createRun(newRun("run-b"));
    store.createRun(newRun("run-c"));
    clock.advance(5);
    store.updateRun("run-a", { status: "done" });

    expect(store.listRuns().map((run) => run.runId)).toEqual(["run-c", "run-b", "run-a"]);
  });

  it("lists a page: the newest `limit` runs, optionally of one status, as summaries without options", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    for (const id of ["run-1", "run-2", "run-3", "run-4"]) {
      store.createRun(newRun(id));
      clock.advance(1);
    }
    store.updateRun("run-2", { status: "done" });
    store.updateRun("run-4", { status: "done" });

    expect(store.listRuns({ limit: 2 }).map((run) => run.runId)).toEqual(["run-4", "run-3"]);
    expect(store.listRuns({ status: "done" }).map((run) => run.runId)).toEqual(["run-4", "run-2"]);
    expect(store.listRuns({ status: "running", limit: 1 })).toEqual([
      {
        runId: "run-3",
        pipelineId: "plan-build",
        status: "running",
        createdAt: "2030-01-01T00:00:00.002Z",
        updatedAt: "2030-01-01T00:00:00.002Z",
      },
    ]);
  });
});
