import { describe, expect, expectTypeOf, it } from "vitest";
import { assign, createActor, setup } from "xstate";
import type { PipelineInput, PipelineOutput } from "../../src/compiler/pipeline-context.js";
import { compilePipeline, createHost, MemoryAuditLog } from "../../src/index.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import { code, pipelineOf } from "../support/pipelines.js";

// Checked by `npm run typecheck` (tsc over test/): each @ts-expect-error must meet an error.
const machine = compilePipeline(
  pipelineOf({ stages: [code("check", () => ({ verdict: "ok" }))] }),
  createHost({
    model: createScriptedModel({ file: "none", stages: new Map() }),
    audit: new MemoryAuditLog(),
  }),
);

describe("a compiled pipeline's type", () => {
  it("is typed with its input, its events and its output", () => {
    expectTypeOf(machine).toHaveProperty("transition");
    // @ts-expect-error the input is {runId, ctx}, not a number
    createActor(machine, { input: 123 });
    const actor = createActor(machine, {
      input: { runId: "typed", ctx: {} } satisfies PipelineInput,
    });
    actor.send({ type: "CANCEL" });
    // @ts-expect-error no such event
    actor.send({ type: "PAUSE" });
    expectTypeOf(actor.getSnapshot().output).toEqualTypeOf<PipelineOutput | undefined>();
  });

  it("hands its typed output to a machine that invokes it", async () => {
    const parent = setup({
      types: {} as { context: { status?: string } },
      actors: { pipeline: machine },
    }).createMachine({
      context: {},
      invoke: {
        src: "pipeline",
        input: { runId: "nested", ctx: {} },
        onDone: {
          target: ".over",
          actions: assign({
            status: ({ event }) => {
              // @ts-expect-error a pipeline's output has no such field
              void event.output.nonsense;
              return event.output.status;
            },
          }),
        },
      },
      initial: "running",
      states: { running: {}, over: { type: "final" } },
    });
    const actor = createActor(parent).start();
    await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    expect(actor.getSnapshot().context.status).toBe("done");
  });
});
