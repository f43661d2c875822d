import { describe, expect, it } from "vitest";
import { describeDrift, fingerprint } from "../../src/compiler/definition-hash.js";
import { definePipeline, loadPipeline } from "../../src/definitions/index.js";
import { durationMs } from "../../src/definitions/wait-timeout.js";
import { DECIDING } from "../support/ask-pipelines.js";
import { at, load, loaded, PIPELINE } from "../support/pipeline-files.js";

/** DECIDING with `timeout` under its ask (YAML flow style). */
const askWith = (timeout: string) =>
  DECIDING.replace(
    "        additionalProperties: false\n",
    `        additionalProperties: false\n      timeout: ${timeout}\n`,
  );

const grantsWith = (timeout: string) =>
  `${PIPELINE}grants:\n  approve: []\n  timeout: ${timeout}\n`;

describe("a duration", () => {
  it("is a number of seconds, or amounts in ms, s, m, h and d", () => {
    expect(durationMs(90)).toBe(90_000);
    expect(durationMs(0.5)).toBe(500);
    expect(durationMs("90s")).toBe(90_000);
    expect(durationMs("10m")).toBe(600_000);
    expect(durationMs("2h")).toBe(7_200_000);
    expect(durationMs("1h30m")).toBe(5_400_000);
    expect(durationMs("1d")).toBe(86_400_000);
    expect(durationMs("250ms")).toBe(250);
    expect(durationMs("10 minutes")).toBeUndefined();
    expect(durationMs("m")).toBeUndefined();
    expect(durationMs(Number.POSITIVE_INFINITY)).toBeUndefined();
  });
});

describe("an ask stage's timeout", () => {
  it("loads with its deadline in milliseconds and its fallback", async () => {
    const answering = loaded(
      (await load(askWith("{ after: 10m, fallback: { answer: { decision: rejected } } }"))).result,
    );
    expect(answering.stages.decide).toMatchObject({
      kind: "ask",
      timeout: { afterMs: 600_000, fallback: { answer: { decision: "rejected" } } },
    });
    const failing = loaded((await load(askWith("{ after: 30, fallback: fail }"))).result);
    expect(failing.stages.decide).toMatchObject({
      timeout: { afterMs: 30_000, fallback: "fail" },
    });
  });

  it("refuses a default answer the ask's schema does not accept, at the answer", async () => {
    const yaml = askWith("{ after: 10m, fallback: { answer: { decision: maybe } } }");
    const { places, result } = await load(yaml);
    expect(places).toEqual([at(yaml, "answer:", "Validation/WaitTimeoutInvalid")]);
    expect(result.ok ? "" : result.diagnostics[0]?.message).toBe(
      "stages.decide.ask.timeout.fallback.answer: the default answer does not match the ask's schema: /decision must be equal to one of the allowed values",
    );
  });

  it("refuses a bad duration and a fallback it does not know, each at its key", async () => {
    const yaml = askWith("{ after: soon, fallback: deny }");
    const { places, result } = await load(yaml);
    expect(places).toEqual([
      at(yaml, "after:", "Validation/WaitTimeoutInvalid"),
      at(yaml, "fallback:", "Validation/WaitTimeoutInvalid"),
    ]);
    expect(result.ok ? [] : result.diagnostics.map((d) => d.message)).toEqual([
      'stages.decide.ask.timeout.after: must be a number of seconds above 0 or a duration such as "90s", "10m", "2h" or "1h30m"',
      "stages.decide.ask.timeout.fallback: must be fail or { answer: <a value the ask's schema accepts> }",
    ]);
  });

  it("refuses a timeout of 0, one without a fallback, and an unknown key", async () => {
    const zero = askWith("{ after: 0, fallback: fail }");
    expect((await load(zero)).places).toEqual([
      at(zero, "after:", "Validation/WaitTimeoutInvalid"),
    ]);
    const missing = askWith("{ after: 5m }");
    const { result } = await load(missing);
    expect(result.ok ? [] : result.diagnostics.map((d) => `${d.code} ${d.message}`)).toEqual([
      'Validation/PipelineMissingField missing required field "stages.decide.ask.timeout.fallback"',
    ]);
    const unknown = askWith("{ after: 5m, fallback: fail, then: fail }");
    expect((await load(unknown)).places).toEqual([
      at(unknown, "then:", "Validation/PipelineDefinitionInvalid"),
    ]);
  });

  it("is written the same way in definePipeline", async () => {
    const spec = definePipeline({
      id: "asking",
      entry: "decide",
      stages: {
        decide: {
          ask: {
            prompt: "Accept?",
            schema: { type: "boolean" },
            timeout: { after: "2h", fallback: { answer: false } },
          },
        },
      },
      next: { decide: [{ when: { path: "output", equals: true }, to: "done" }, { to: "fail" }] },
    });
    const pipeline = loaded(await loadPipeline(spec, { baseDir: "." }));
    expect(pipeline.stages.decide).toMatchObject({
      timeout: { afterMs: 7_200_000, fallback: { answer: false } },
    });
    const refused = await loadPipeline(
      definePipeline({
        ...spec,
        stages: {
          decide: {
            ask: {
              prompt: "Accept?",
              schema: { type: "boolean" },
              timeout: { after: "2h", fallback: { answer: "yes" } },
            },
          },
        },
      }),
      { baseDir: "." },
    );
    expect(refused.ok ? [] : refused.diagnostics.map((d) => d.code)).toEqual([
      "Validation/WaitTimeoutInvalid",
    ]);
  });

  it("is part of the definition: a changed deadline is drift", async () => {
    const before = loaded((await load(askWith("{ after: 10m, fallback: fail }"))).result);
    const after = loaded((await load(askWith("{ after: 20m, fallback: fail }"))).result);
    expect(fingerprint(before).hash).not.toBe(fingerprint(after).hash);
    expect(describeDrift(fingerprint(before).parts, fingerprint(after).parts)).toEqual([
      "stage decide changed",
    ]);
  });
});

describe("the grants block's timeout", () => {
  it("loads with its deadline and its fallback, deny or fail", async () => {
    const denying = loaded((await load(grantsWith("{ after: 1h30m, fallback: deny }"))).result);
    expect(denying.grants).toEqual({
      approve: [],
      deny: [],
      timeout: { afterMs: 5_400_000, fallback: "deny" },
    });
    const failing = loaded((await load(grantsWith("{ after: 45, fallback: fail }"))).result);
    expect(failing.grants.timeout).toEqual({ afterMs: 45_000, fallback: "fail" });
  });

  it("refuses a default answer and a negative duration, each at its key", async () => {
    const yaml = grantsWith("{ after: -5, fallback: { answer: yes } }");
    const { places, result } = await load(yaml);
    expect(places).toEqual([
      at(yaml, "after:", "Validation/WaitTimeoutInvalid"),
      at(yaml, "fallback:", "Validation/WaitTimeoutInvalid"),
    ]);
    expect(result.ok ? "" : result.diagnostics[1]?.message).toBe(
      "grants.timeout.fallback: must be deny (the call is denied, and the model is told) or fail (the stage fails)",
    );
  });

  it("is part of the definition: a changed fallback is drift", async () => {
    const before = loaded((await load(grantsWith("{ after: 1h, fallback: deny }"))).result);
    const after = loaded((await load(grantsWith("{ after: 1h, fallback: fail }"))).result);
    expect(describeDrift(fingerprint(before).parts, fingerprint(after).parts)).toEqual([
      "pipeline (context, entry, transitions, grants) changed",
    ]);
  });
});
