import { describe, expect, it, vi } from "vitest";
import { createActor, type InspectionEvent, toPromise, waitFor } from "xstate";
import { createStageMachine } from "../../src/compiler/stage-machine.js";
import type { StageServices } from "../../src/compiler/stage-services-port.js";
import type { StageResult } from "../../src/compiler/stage-types.js";
import { StagechartError } from "../../src/errors.js";
import { stageMachineFor } from "../../src/runtime/run-stage.js";
import { createStageServices } from "../../src/runtime/stage-services.js";
import { harness, loadStage, stageInput } from "../support/stage-harness.js";

/** The Plan stage reading with Grep (in its envelope) `lookups` times, then submitting. */
const planScript = (lookups: number) => `
stages:
  plan:
${"    - tool: Grep\n      args: { pattern: auth }\n".repeat(lookups)}    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`;

interface Work {
  /** XState microsteps of the stage actor (each a transition taken, eventless ones included). */
  microsteps: number;
  /** Actors the stage spawned (invoked services). */
  spawned: number;
  /** Context keys holding `undefined` in any snapshot of the stage while it acts. */
  undefinedKeys: Set<string>;
}

/** What a Plan execution with `lookups` envelope tool calls costs the stage machine. */
async function planWork(lookups: number): Promise<Work> {
  const h = harness(planScript(lookups));
  const work: Work = { microsteps: 0, spawned: 0, undefinedKeys: new Set() };
  let stage: unknown; // the first actor the system announces
  const actor = createActor(stageMachineFor(h.host), {
    input: stageInput(loadStage("plan")),
    inspect: (event: InspectionEvent) => {
      if (event.type === "@xstate.actor") {
        if (stage === undefined) stage = event.actorRef;
        else work.spawned += 1;
      }
      if (event.type === "@xstate.microstep" && event.actorRef === stage) work.microsteps += 1;
      if (event.type === "@xstate.snapshot" && event.actorRef === stage) {
        const snapshot = event.snapshot as unknown as {
          context: Record<string, unknown>;
          matches(state: string): boolean;
        };
        if (!snapshot.matches("act")) return;
        for (const [key, value] of Object.entries(snapshot.context))
          if (value === undefined) work.undefinedKeys.add(key);
      }
    },
  });
  actor.start();
  const result = await toPromise(actor);
  expect(result.verdict).toBe("ok");
  expect(result.modelCalls).toBe(lookups + 1);
  expect(h.types().filter((type) => type === "ToolSucceeded")).toHaveLength(lookups);
  return work;
}

describe("the stage machine's work per model turn", () => {
  it("takes a turn that runs one envelope tool in two microsteps and no actor", async () => {
    const few = await planWork(2);
    const many = await planWork(12);
    const perTurn = {
      microsteps: (many.microsteps - few.microsteps) / 10,
      spawned: (many.spawned - few.spawned) / 10,
    };
    // calling → running (approved by the envelope, audited as through `proposed`), running →
    // the next turn's calling; the model call and the tool run are made by Act's worker. (It
    // was seven steps, through the eventless dispatch.next, guarded, next and turn, then three,
    // through proposed; and two actors, one per call.)
    expect(perTurn).toEqual({ microsteps: 2, spawned: 0 });
  });

  it("runs in three actors: before Act, Act's calls, after Act", async () => {
    const lookups = 2;
    const work = await planWork(lookups);
    // A stage execution spawns the actor of Setup, Init and CheckGate, Act's worker, which
    // makes every model and tool call, and the actor of Assert and Exit (it was one actor per
    // phase, five, and one per call), and takes four microsteps besides its turns': setup →
    // act (and its eventless turn → calling), the completing turn's calling → assert, and
    // assert → done (it was seven, through init, checkGate and exit).
    expect({
      microsteps: work.microsteps - lookups * 2,
      spawned: work.spawned,
    }).toEqual({ microsteps: 4, spawned: 3 });
  });

  it("keeps no key it has cleared in its context: every step copies each key there is", async () => {
    // Past about 20 keys, V8 turns the copy XState makes at each assign into a dictionary,
    // several times slower to copy and to read.
    expect([...(await planWork(3)).undefinedKeys]).toEqual([]);
  });

  it("aborts nothing when Act is left with no call running: its last reply completed it", async () => {
    const aborts = vi.spyOn(AbortController.prototype, "abort");
    try {
      await planWork(3);
      const reasons = aborts.mock.calls.map(([reason]) => (reason as Error | undefined)?.message);
      expect(reasons).not.toContain("the stage left Act");
    } finally {
      aborts.mockRestore();
    }
  });
});

/** The Plan stage run on its host's services as `edit` changes them, with the audit it wrote. */
async function planOn(script: string, edit: (services: StageServices) => Partial<StageServices>) {
  const h = harness(script);
  const services = createStageServices(h.host);
  const actor = createActor(createStageMachine({ ...services, ...edit(services) }), {
    input: stageInput(loadStage("plan")),
  });
  actor.start();
  const done = await waitFor(actor, (s) => s.status !== "active");
  return { status: done.status, output: done.output as StageResult | undefined, types: h.types() };
}

const refused = () =>
  new StagechartError("ProviderCapability/MissingToolCalling", "no tools today");

describe("a call that throws as it is made", () => {
  it("is a model call that failed, as a rejected one is", async () => {
    const rejecting = await planOn(planScript(0), () => ({
      callModel: () => Promise.reject(refused()),
    }));
    const throwing = await planOn(planScript(0), () => ({
      callModel: () => {
        throw refused();
      },
    }));
    expect(rejecting).toMatchObject({ status: "done", output: { verdict: "fail" } });
    expect(throwing).toEqual(rejecting);
  });

  it("is a tool run that crashed, as a rejected one is, and the stage goes on", async () => {
    const crash = new Error("the tool fell over");
    const rejecting = await planOn(planScript(1), () => ({
      runTool: () => Promise.reject(crash),
    }));
    const throwing = await planOn(planScript(1), () => ({
      runTool: () => {
        throw crash;
      },
    }));
    expect(rejecting).toMatchObject({ status: "done", output: { verdict: "ok" } });
    expect(rejecting.types).toContain("ToolFailed");
    expect(throwing).toEqual(rejecting);
  });
});

describe("a report of a call the stage no longer waits for", () => {
  it("is not credited to the call it waits for", async () => {
    const h = harness(planScript(0));
    const services = createStageServices(h.host);
    // The model call never answers: only the stale report could move the stage.
    const actor = createActor(
      createStageMachine({ ...services, callModel: () => new Promise(() => {}) }),
      { input: stageInput(loadStage("plan")) },
    );
    actor.start();
    const calling = await waitFor(actor, (s) => s.matches({ act: "calling" }));
    const completion = {
      kind: "completion" as const,
      parsed: { summary: "stale", steps: [] },
      entries: [],
      tools: ["submit_plan"],
      usage: { inputTokens: 0, outputTokens: 0 },
    };
    actor.send({
      type: "MODEL_REPLIED",
      modelCalls: calling.context.modelCalls + 1,
      output: completion,
    } as never);
    actor.send({
      type: "MODEL_FAILED",
      modelCalls: calling.context.modelCalls - 1,
      error: refused(),
    } as never);
    expect(actor.getSnapshot().matches({ act: "calling" })).toBe(true);
    expect(h.types()).not.toContain("ModelTurn");
    actor.stop();
  });
});
