import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { breadcrumb } from "../../../src/definitions/pi-workflows/breadcrumb.js";
import { loadWorkflowRoot } from "../../../src/definitions/pi-workflows/index.js";
import { REPO_ROOT } from "../../support/cli.js";

describe("the breadcrumb of a run of machines/pi-release/release", () => {
  it("names the root, then each level with its 1-based place in its own workflow", async () => {
    const { kept } = await loadWorkflowRoot(join(REPO_ROOT, "machines/pi-release"));
    const at = (execution: string) => breadcrumb(kept, "release", "run-1", `run-1/${execution}`);
    expect(at("build/1")).toBe("Release Pipeline > 🔨 Build [1/3]");
    expect(at("code-review/1/static-analysis/1")).toBe(
      "Release Pipeline > Code Review [2/3] > 🔍 Static Analysis [1/2]",
    );
    expect(at("code-review/1/manual-review/2")).toBe(
      "Release Pipeline > Code Review [2/3] > 👀 Manual Review [2/2]",
    );
    expect(at("publish/1")).toBe("Release Pipeline > 🚀 Publish [3/3]");
    expect(at("nowhere/1")).toBeUndefined();
  });
});
