import { describe, expect, it } from "vitest";
import type { ToolRule } from "../../src/runtime/rules.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { harness, loadStage, stageInput } from "../support/stage-harness.js";

/** Execute writing a secret the guards refuse and reading a file they let through, in one turn. */
const SECRET_THEN_READ = `
stages:
  execute:
    - calls:
        - { tool: Write, args: { path: .env, content: "SECRET=1" } }
        - { tool: Read, args: { path: src/auth.ts } }
    - tool: submit_diff
      args: { summary: "read it", files: [{ path: src/auth.ts, change: modified }] }
`;

/** The rules, telling `lookups` each time a call is matched against them. */
function counted(rules: readonly ToolRule[], lookups: { count: number }): readonly ToolRule[] {
  return new Proxy(rules, {
    get(target, key, receiver) {
      if (key === "find") lookups.count += 1;
      return Reflect.get(target, key, receiver);
    },
  });
}

describe("the stage services bound to a host", () => {
  it("match each approved call against the guard rules once, a call they deny included", async () => {
    const h = harness(SECRET_THEN_READ, { guards: ["Write(.env)"] });
    const lookups = { count: 0 };
    const host = { ...h.host, guards: counted(h.host.guards, lookups) };
    const result = await runStage(host, stageInput(loadStage("execute")));
    expect(result.verdict).toBe("ok");
    const approved = h.audit.events.filter((e) => e.type === "ToolApproved");
    const denied = h.audit.events.filter((e) => e.type === "ToolDenied");
    expect(denied.map((e) => [e.payload.tool, e.payload.source])).toEqual([["Write", "guard"]]);
    expect(lookups.count).toBe(approved.length);
    // The model is told which rule denied its call.
    const entries = await h.host.transcripts.read("run-1/execute/1");
    expect(JSON.stringify(entries)).toContain("denied by the guard rule Write(.env)");
  });
});
