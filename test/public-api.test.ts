import { describe, expect, it } from "vitest";

/**
 * What an app may import. A name added here is a promise to keep it, so each entry's exports
 * are listed in full: adding one is a deliberate change to this list, not a side effect of
 * exporting something from an internal module.
 */
describe("the public API", () => {
  it("exports from stagechart only what an app loads, runs, stores and inspects pipelines with", async () => {
    const names = Object.keys(await import("../src/index.js")).sort();
    expect(names).toEqual([
      "ERROR_CODES",
      "MemoryAuditLog",
      "PostgresStore",
      "SqliteStore",
      "StagechartError",
      "attachMcpServers",
      "callbackInteractor",
      "compilePipeline",
      "createFork",
      "createHost",
      "createRunControl",
      "createRunInspector",
      "createScriptedModel",
      "createScriptedModelFromFile",
      "createTracing",
      "definePipeline",
      "endRefusedFork",
      "forkRun",
      "formatDiagnostic",
      "isErrorCode",
      "isStagechartError",
      "loadPipeline",
      "loadPipelineFile",
      "loadPriceFile",
      "loadStageFile",
      "openStore",
      "parseStageDefinition",
      "pruneRuns",
      "refusalOf",
      "renderGraph",
      "reopenRun",
      "resolveModelSpec",
      "resumeRun",
      "runHistory",
      "runStage",
      "startInspectServer",
      "startRun",
      "startWorkerPool",
      "terminalInteractor",
      "tracingFromEnv",
      "tracingWith",
    ]);
    expect(names.length).toBeLessThanOrEqual(45);
  });

  it("exports from stagechart/testing only the model-based testing of pipelines", async () => {
    const names = Object.keys(await import("../src/testing/index.js")).sort();
    expect(names).toEqual([
      "activeStages",
      "controlEventsFrom",
      "coveringPaths",
      "modelMachine",
      "mutationScore",
      "pathTests",
      "pipelinePaths",
      "resultFor",
      "runPath",
      "stageDone",
      "stageOutcomes",
      "testPipeline",
      "transitionCoverage",
      "visitsOf",
    ]);
    expect(names.length).toBeLessThanOrEqual(15);
  });

  it("keeps internals such as the store's migrations and grant minting out of the package entry", async () => {
    const entry: Record<string, unknown> = await import("../src/index.js");
    for (const internal of ["MIGRATIONS", "SCHEMA_VERSION", "mintGrant", "argsDigest", "placeOf"])
      expect(entry[internal], internal).toBeUndefined();
  });
});
