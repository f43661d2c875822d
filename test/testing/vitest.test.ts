import { describe, expect, it } from "vitest";
import { pathTests, type RegisterTest } from "../../src/testing/vitest.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

/** The tests `pathTests` registers, by name, each run to its outcome: "passed" or its error. */
async function registered(register: (test: RegisterTest) => void): Promise<Map<string, string>> {
  const bodies: [string, () => Promise<void>][] = [];
  register((name, body) => bodies.push([name, body]));
  const outcomes = new Map<string, string>();
  for (const [name, body] of bodies)
    outcomes.set(
      name,
      await body().then(
        () => "passed",
        (error: Error) => error.message,
      ),
    );
  return outcomes;
}

describe("pathTests", () => {
  /** plan, then a code stage `check` that always passes; a failed check fails the run. */
  const checked = pipelineOf({
    id: "checked",
    stages: [llm("plan"), code("check", () => ({ verdict: "ok" }))],
    next: { plan: "check" },
  });
  const failedCheck = "plan: ok → check: fail";

  it("drives code stages with the fixtures given, as `stagechart test --fixtures` does", async () => {
    const outcomes = await registered((test) =>
      pathTests(checked, test, { fixtures: { check: { verdict: "fail", reason: "lint" } } }),
    );
    const [name, outcome] = [...outcomes].find(([n]) => n.endsWith(failedCheck)) ?? [];
    expect({ name, outcome }).toEqual({
      name: expect.stringContaining("(failed)"),
      outcome: "passed",
    });
  });

  it("without fixtures, fails the path the real code does not take, naming the fixture it needs", async () => {
    const outcomes = await registered((test) => pathTests(checked, test));
    const [, outcome] = [...outcomes].find(([n]) => n.endsWith(failedCheck)) ?? [];
    expect(outcome).toMatch(/not driven: step 2: check is a code stage .*give it a fixture/);
  });
});
