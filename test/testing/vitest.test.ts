import { describe, expect, it } from "vitest";
import type { CodeStageFunction } from "../../src/definitions/contract.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
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

  /** plan, then a code stage `check`; a failed check goes back to plan, a passed one on to lint. */
  const looping = (check: CodeStageFunction) =>
    pipelineOf({
      id: "looping",
      stages: [llm("plan"), code("check", check), llm("lint")],
      next: {
        plan: "check",
        check: {
          kind: "rules",
          rules: [
            { when: { path: "verdict", op: "equals", value: "fail" }, to: "plan" },
            { to: "lint" },
          ],
        },
      },
    });

  /** The test `pathTests` registers for the path whose name ends with `steps`, with its timeout. */
  function registeredFor(pipeline: PipelineDefinition, steps: string, timeoutMs?: number) {
    const bodies: { name: string; body: () => Promise<void>; timeoutMs: number | undefined }[] = [];
    pathTests(pipeline, (name, body, timeout) => bodies.push({ name, body, timeoutMs: timeout }), {
      ...(timeoutMs !== undefined && { timeoutMs }),
    });
    const found = bodies.find((b) => b.name.endsWith(steps));
    if (!found) throw new Error(`no path ${steps}`);
    return found;
  }

  it("fails a path the run leaves as soon as it leaves it, with its reason, long before the test's timeout", async () => {
    const { body, timeoutMs } = registeredFor(
      looping(() => ({ verdict: "ok" })),
      "plan: ok → check: fail → plan: ok → check: ok → lint: ok",
    );
    expect(timeoutMs).toBe(60_000);
    const started = Date.now();
    const outcome = await body().then(
      () => "passed",
      (error: Error) => error.message,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(outcome).toMatch(
      /^path-\d+: not driven: step 2: check is a code stage whose outcome no script forces; give it a fixture; step 2 \(check: fail\): check ended ok, not fail$/,
    );
  }, 15_000);

  it("stops a run that does not end before the test's own timeout, so the test fails with the path's reason", async () => {
    const hanging = looping(() => new Promise(() => undefined));
    const { body, timeoutMs } = registeredFor(hanging, "plan: ok → check: ok → lint: ok", 4_000);
    expect(timeoutMs).toBe(4_000);
    const started = Date.now();
    const outcome = await body().then(
      () => "passed",
      (error: Error) => error.message,
    );
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(outcome).toMatch(/the run ended timed-out, the path done/);
  }, 10_000);
});
