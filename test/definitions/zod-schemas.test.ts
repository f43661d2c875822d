import { describe, expect, expectTypeOf, it } from "vitest";
import * as z from "zod";
import { fingerprint } from "../../src/compiler/definition-hash.js";
import { definePipeline, loadPipeline } from "../../src/definitions/index.js";
import { startRun } from "../../src/runtime/run.js";
import * as mini from "../../src/zod.js";
import { loaded, MACHINES_DIR } from "../support/pipeline-files.js";
import { harness } from "../support/stage-harness.js";

const Plan = z.object({
  summary: z.string().min(1),
  steps: z.array(z.string()).min(1),
});

const planned = (completion: unknown, context: unknown, askSchema: unknown) =>
  definePipeline({
    id: "typed",
    context: context as Record<string, unknown>,
    entry: "plan",
    stages: {
      plan: { file: "../stages/plan.md", completion: completion as Record<string, unknown> },
      size: { ask: { prompt: "How big?", schema: askSchema as Record<string, unknown> } },
    },
    next: { plan: "size", size: "done" },
  });

const SCRIPT = (steps: string) => `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "rename it", steps: ${steps} }
`;

describe("zod schemas in a TypeScript pipeline", () => {
  it("load to the definition their JSON Schema gives (zod's own toJSONSchema), from the app's zod or stagechart's", async () => {
    const context = z.object({ task: z.string().min(1) });
    const size = z.object({ points: z.number().int().min(1) });
    const fromZod = loaded(
      await loadPipeline(planned(Plan, context, size), { baseDir: MACHINES_DIR }),
    );
    // As a YAML pipeline writes it: no `$schema` (draft 2020-12 is what Ajv assumes anyway).
    const json = (schema: z.ZodType) => {
      const { $schema, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12" });
      expect($schema).toBe("https://json-schema.org/draft/2020-12/schema");
      return rest;
    };
    const fromJson = loaded(
      await loadPipeline(planned(json(Plan), json(context), json(size)), {
        baseDir: MACHINES_DIR,
      }),
    );
    expect(fromZod).toEqual(fromJson);
    // The same definition, so the same fingerprint: a run started from either resumes under the other.
    expect(fingerprint(fromZod)).toEqual(fingerprint(fromJson));
    expect(fromZod.context).toMatchObject({ required: ["task"] });
    const plan = fromZod.stages.plan;
    expect(plan?.kind === "llm" && plan.definition.completionSchema).toEqual(json(Plan));
    expect(fromZod.stages.size).toMatchObject({ kind: "ask", schema: json(size) });

    // The project's own functional build is zod 4 too.
    const miniContext = mini.object({ task: mini.string() });
    const fromMini = loaded(
      await loadPipeline(planned(Plan, miniContext, size), { baseDir: MACHINES_DIR }),
    );
    expect(fromMini.context).toMatchObject({
      type: "object",
      properties: { task: { type: "string" } },
    });
  });

  it("check completion payloads with the converted schema when the run goes", async () => {
    const spec = planned(Plan, z.object({ task: z.string() }), z.object({ points: z.number() }));
    const pipeline = loaded(await loadPipeline(spec, { baseDir: MACHINES_DIR }));

    const good = harness(SCRIPT('["rename auth"]'), { unansweredGrants: "suspend" });
    const run = await startRun(pipeline, { host: good.host, task: "t" });
    if (!run.ok) throw run.error;
    // The plan passes the zod-derived schema and the run waits at the ask stage.
    expect((await run.value.result).status).toBe("suspended");
    expect(good.audit.events.map((e) => e.type)).toContain("StageExited");

    // An empty list of steps breaks .min(1): the payload is refused, then the turn cap is hit.
    const bad = harness(SCRIPT("[]"));
    const refused = await startRun(pipeline, { host: bad.host, task: "t" });
    if (!refused.ok) throw refused.error;
    expect((await refused.value.result).status).toBe("failed");
    expect(bad.audit.events.some((e) => e.type === "CompletionRejected")).toBe(true);
  });

  it("report a schema with no JSON Schema form as Validation/PipelineSchemaUnconvertible, naming where it is", async () => {
    const result = await loadPipeline(
      planned(Plan, z.object({ task: z.string(), at: z.date() }), z.object({})),
      { baseDir: MACHINES_DIR },
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.diagnostics).toEqual([
      expect.objectContaining({
        file: "typed.ts (definePipeline)",
        code: "Validation/PipelineSchemaUnconvertible",
        message: expect.stringMatching(/^context: /),
      }),
    ]);
  });

  it("refuse another library's schema, zod 3's among them, naming it and what to use instead", async () => {
    const standard = (vendor: string) => ({
      "~standard": { version: 1, vendor, validate: () => ({ value: {} }) },
    });
    const result = await loadPipeline(planned(Plan, standard("zod"), standard("valibot")), {
      baseDir: MACHINES_DIR,
    });
    expect(result.ok ? [] : result.diagnostics.map((d) => [d.code, d.message])).toEqual([
      [
        "Validation/PipelineSchemaUnconvertible",
        'context: a zod 3 schema (import zod 4: "zod" 4, or "zod/v4" of zod 3.25); stagechart takes a JSON Schema or a zod 4 schema here',
      ],
      [
        "Validation/PipelineSchemaUnconvertible",
        "stages.size.ask.schema: a valibot schema; stagechart takes a JSON Schema or a zod 4 schema here",
      ],
    ]);
  });

  it("refuse a completion that is not an object schema, as the stage file's would be", async () => {
    const result = await loadPipeline(
      planned(z.array(z.string()), z.object({ task: z.string() }), z.object({})),
      { baseDir: MACHINES_DIR },
    );
    expect(result.ok ? [] : result.diagnostics.map((d) => d.code)).toContain(
      "Validation/StageCompletionSchemaInvalid",
    );
  });

  it("type each stage's hooks with its completion payload", () => {
    const typed = definePipeline({
      id: "typed",
      entry: "plan",
      stages: {
        plan: { file: "stages/plan.md", completion: Plan },
        review: { file: "stages/review.md" },
      },
      next: { plan: "review" },
      hooks: {
        plan: {
          assert: ({ parsed }) => {
            expectTypeOf(parsed).toEqualTypeOf<z.output<typeof Plan> | undefined>();
            return { verdict: (parsed?.steps.length ?? 0) > 0 ? "ok" : "retry" };
          },
          exit: ({ parsed }) => parsed?.summary,
          refuseCompletion: ({ parsed }) => {
            expectTypeOf(parsed).toEqualTypeOf<z.output<typeof Plan>>();
            return parsed.steps.includes("") ? "a step is empty" : undefined;
          },
        },
        review: {
          // Without a zod completion, parsed is typed as before.
          assert: ({ parsed }) => {
            expectTypeOf(parsed).toEqualTypeOf<unknown>();
            return { verdict: "ok" };
          },
        },
      },
    });
    expect(typed.stages.plan.completion).toBe(Plan);
  });
});
