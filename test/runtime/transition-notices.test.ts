import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { TransitionNotice } from "../../src/definitions/contract.js";
import { type RunHandle, startRun } from "../../src/runtime/run.js";
import { code, pipelineOf, waits } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { liveActor } from "./support/live-actor.js";

function started(handle: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!handle.ok) throw handle.error;
  return handle.value;
}

/** one → two → (two again once) → done, telling `notices` every transition. */
function loopingPipeline(notices: TransitionNotice[], onTransition?: () => void) {
  return pipelineOf({
    stages: [code("one", () => ({ verdict: "ok" })), code("two", () => ({ verdict: "ok" }))],
    next: {
      one: "two",
      two: {
        kind: "rules",
        rules: [{ when: { visits: "two", op: "lt", value: 2 }, to: "two" }, { to: "done" }],
      },
    },
    onTransition: (notice) => {
      notices.push(notice);
      onTransition?.();
    },
  });
}

describe("a pipeline's onTransition hook", () => {
  it("is told every state the run enters, in order, with its visits and root", async () => {
    const h = harness("stages: {}");
    const notices: TransitionNotice[] = [];
    const result = await started(
      await startRun(loopingPipeline(notices), {
        host: h.host,
        runId: "run-1",
        ctx: { task: "t" },
      }),
    ).result;
    expect(result.status).toBe("done");
    expect(notices.map((n) => [n.previous, n.state])).toEqual([
      [undefined, "one"],
      ["one", "two"],
      ["two", "two"],
      ["two", "done"],
    ]);
    const last = notices.at(-1) as TransitionNotice;
    expect(last).toMatchObject({ runId: "run-1", root: h.root, ctx: { task: "t" } });
    expect(last.visits).toEqual({ one: 1, two: 2 });
    expect(Object.keys(last.results).sort()).toEqual(["one", "two"]);
  });

  it("a hook that throws is audited as TransitionHookFailed and the run goes on", async () => {
    const h = harness("stages: {}");
    const result = await started(
      await startRun(
        loopingPipeline([], () => {
          throw new Error("disk full");
        }),
        { host: h.host, runId: "run-1" },
      ),
    ).result;
    expect(result.status).toBe("done");
    const failures = h.audit.of("run-1").filter((e) => e.type === "TransitionHookFailed");
    expect(failures.map((e) => e.payload.state)).toEqual(["one", "two", "two", "done"]);
    expect(failures[0]?.payload.error).toMatchObject({ message: "disk full" });
  });
});

describe("override: adjacent", () => {
  const chain = (override?: "adjacent") =>
    pipelineOf({
      stages: [waits("one", 5000), waits("two", 5), waits("three", 5)],
      next: { one: "two", two: "three" },
      ...(override && { override }),
    });

  it("moves a run only to a stage a rule of the current one leads to", async () => {
    const h = harness("stages: {}");
    const run = started(await startRun(chain("adjacent"), { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(run), (s) => s.context.current === "one");
    const skipping = run.send({ type: "OVERRIDE", to: "three", reason: "skip two" });
    expect(skipping.ok ? undefined : skipping.error).toMatchObject({
      code: "Session/IllegalTransition",
      message: expect.stringContaining("override: adjacent"),
    });
    expect(run.send({ type: "OVERRIDE", to: "two", reason: "one is slow" }).ok).toBe(true);
    expect((await run.result).status).toBe("done");
  });

  it("the default reaches any stage the transitions reach", async () => {
    const h = harness("stages: {}");
    const run = started(await startRun(chain(), { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(run), (s) => s.context.current === "one");
    expect(run.send({ type: "OVERRIDE", to: "three", reason: "skip two" }).ok).toBe(true);
    expect((await run.result).status).toBe("done");
  });
});
