import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { settingsFor } from "../../src/cli/host-options.js";

describe("the settings a run stores for resume", () => {
  it("keeps file-based model specs and the cassette as absolute paths, so resume finds them anywhere", () => {
    const settings = settingsFor({
      pipelineFile: "machines/code-review.yaml",
      model: "replay:cassettes/run.json",
      record: "out/again.json",
      mode: "ask",
    });
    expect(settings).toMatchObject({
      model: `replay:${resolve("cassettes/run.json")}`,
      record: resolve("out/again.json"),
    });
  });

  it("keeps a hosted model's spec as given: a spec, never a key", () => {
    const settings = settingsFor({
      pipelineFile: "machines/code-review.yaml",
      model: "openai-compatible:http://localhost:11434/v1#llama3.1",
      mode: "ask",
    });
    expect(settings.model).toBe("openai-compatible:http://localhost:11434/v1#llama3.1");
    expect(settings).not.toHaveProperty("record");
  });

  it("stores a spec whose base URL carries a key without it, and notes that a resume needs one", () => {
    const settings = settingsFor({
      pipelineFile: "machines/code-review.yaml",
      model: "openai-compatible:http://user:sk-in-url@localhost:8000/v1#m",
      mode: "ask",
    });
    expect(settings.model).toBe("openai-compatible:http://localhost:8000/v1#m");
    expect(settings.modelKeyRequired).toBe(true);
    expect(JSON.stringify({ ...settings })).not.toContain("sk-in-url");
  });
});
