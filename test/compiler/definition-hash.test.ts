import { describe, expect, it } from "vitest";
import { describeDrift, fingerprint } from "../../src/compiler/definition-hash.js";
import type { JsonValue } from "../../src/definitions/contract.js";
import type { PipelineStage } from "../../src/definitions/pipeline-types.js";
import { printedBy } from "../support/fresh-process.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

const review = (edit?: (text: string) => string) =>
  pipelineOf({
    id: "review-only",
    stages: [llm("plan", edit), code("check", () => ({ verdict: "ok" }))],
    next: { plan: "check" },
  });

const drift = (before: ReturnType<typeof review>, after: ReturnType<typeof review>) =>
  describeDrift(fingerprint(before).parts, fingerprint(after).parts);

describe("definition drift", () => {
  it("is nothing for the same definition, loaded twice", () => {
    expect(fingerprint(review()).hash).toBe(fingerprint(review()).hash);
    expect(drift(review(), review())).toEqual([]);
  });

  it("names the fields of an LLM stage that changed", () => {
    const changed = review((text) =>
      text.replace(/^turnCap: .*$/m, "turnCap: 3").replace("You are", "You were"),
    );
    expect(drift(review(), changed)).toEqual(["stage plan changed (body, turnCap)"]);
  });

  it("names the output fields an LLM stage hands on, and its exit hook", () => {
    const reduced = review();
    reduced.stages.plan = { ...(reduced.stages.plan as PipelineStage & { kind: "llm" }) };
    (reduced.stages.plan as { outputFields?: string[] }).outputFields = ["summary"];
    expect(drift(review(), reduced)).toEqual(["stage plan changed (output)"]);
    const hooked = review();
    hooked.hooks = { plan: { exit: ({ parsed }) => parsed as JsonValue } };
    expect(drift(review(), hooked)).toEqual([
      "pipeline (context, entry, transitions, grants) changed",
    ]);
  });

  it("names stages added and removed, and changes to the pipeline itself", () => {
    const more = review();
    more.stages.extra = { kind: "code", id: "extra", run: () => ({ verdict: "ok" }) };
    expect(drift(review(), more)).toEqual(["stage extra added"]);
    const fewer = review();
    delete fewer.stages.plan;
    expect(drift(review(), fewer)).toEqual(["stage plan removed"]);
    const rerouted = review();
    rerouted.entry = "check";
    expect(drift(review(), rerouted)).toEqual([
      "pipeline (context, entry, transitions, grants) changed",
    ]);
  });
});

describe("a definition's hash", () => {
  it("is the same under every locale the process runs in", () => {
    const script = `
      import { loadPipeline } from "./dist/definitions/index.js";
      import { fingerprint } from "./dist/compiler/definition-hash.js";
      const loaded = await loadPipeline({
        id: "locale-free",
        entry: "a",
        context: { type: "object", properties: { aardvark: { type: "string" }, bee: { type: "string" } } },
        stages: { a: { code: () => ({ verdict: "ok" }) } },
        next: { a: "done" },
      });
      console.log(fingerprint(loaded.value).hash);
    `;
    const hashUnder = (locale: string) => printedBy(script, { LC_ALL: locale, LANG: locale });
    // Danish sorts "aa" after "z"; Lithuanian puts "y" between "i" and "k".
    expect(new Set(["en_US.UTF-8", "da_DK.UTF-8", "lt_LT.UTF-8"].map(hashUnder)).size).toBe(1);
  });
});
