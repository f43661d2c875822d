import { describe, expect, it } from "vitest";
import { stageEntrySchema } from "../../src/definitions/stage-entry-schema.js";

describe("stage entry schemas", () => {
  it("are built once per form: zod compiles each schema object's parser on its first parse, so a schema built per pipeline compiles it again for every pipeline", () => {
    expect(stageEntrySchema("yaml")).toBe(stageEntrySchema("yaml"));
    expect(stageEntrySchema("ts")).toBe(stageEntrySchema("ts"));
    expect(stageEntrySchema("ts")).not.toBe(stageEntrySchema("yaml"));
  });

  it("each form takes its own entries: a YAML entry names a file, a TypeScript one may hold a stage", () => {
    expect(stageEntrySchema("yaml").safeParse({ file: "plan.md" }).success).toBe(true);
    expect(stageEntrySchema("yaml").safeParse({ stage: {} }).success).toBe(false);
    expect(stageEntrySchema("ts").safeParse({ file: "plan.md" }).success).toBe(true);
  });
});
