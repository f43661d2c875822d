import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { JoinPolicy, MapGroup } from "../../src/definitions/pipeline-types.js";
import { loadPipelineFile } from "../../src/index.js";
import { listLengths } from "../../src/testing/map-lists.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

const FIXTURE = join(import.meta.dirname, "../fixtures/map-review/review-files.yaml");
const spell = (steps: { stage: string; outcome: string }[]) =>
  steps.map((s) => `${s.stage}:${s.outcome}`).join(" > ");

/** `list` (code) hands on `files`; `test` runs once per file under `policy`; `review` joins. */
const mapped = (policy: JoinPolicy, group: Partial<MapGroup> = {}) =>
  pipelineOf({
    id: "mapped",
    stages: [
      code("list", () => ({ verdict: "ok", output: { files: [] } })),
      llm("test"),
      llm("review"),
    ],
    next: {
      list: { kind: "map", over: "output.files", stage: "test", join: "review", policy, ...group },
    },
  });
/** Every simple path that does not suspend, spelled, with its end. */
const runsOf = (policy: JoinPolicy, group: Partial<MapGroup> = {}) =>
  pipelinePaths(mapped(policy, group), { strategy: "simple" })
    .paths.filter((p) => p.end !== "suspended")
    .map((p) => `${spell(p.steps)} => ${p.end}`);

describe("listLengths", () => {
  it("models none, one and two items, and each policy's and cap's edges", () => {
    expect(listLengths({ policy: { kind: "fail-fast" } } as MapGroup)).toEqual([0, 1, 2]);
    expect(listLengths({ policy: { kind: "quorum", k: 3 } } as MapGroup)).toEqual([0, 1, 2, 3, 4]);
    expect(listLengths({ policy: { kind: "any" }, maxConcurrency: 2 } as MapGroup)).toEqual([
      0, 1, 2, 3,
    ]);
    expect(listLengths({ policy: { kind: "any" }, maxItems: 1 } as MapGroup)).toEqual([0, 1, 2]);
    expect(listLengths({ policy: { kind: "all-settled" }, maxItems: 5 } as MapGroup)).toEqual([
      0, 1, 2, 6,
    ]);
  });

  it("leaves out an edge past the longest list it models", () => {
    expect(listLengths({ policy: { kind: "quorum", k: 20 } } as MapGroup)).toEqual([0, 1, 2]);
  });
});

describe("pipelinePaths through a map group", () => {
  it("drives the fan-out to lists of each length, naming the length, each item a sibling of its own", async () => {
    const loaded = await loadPipelineFile(FIXTURE);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const spelled = pipelinePaths(loaded.value).paths.map((p) => `${spell(p.steps)} => ${p.end}`);
    expect(spelled).toContain("list-files:ok: output.files has 0 items > summarize:ok => done");
    expect(spelled).toContain(
      "list-files:ok: output.files has 1 item > review-file[0]:cap-hit > summarize:ok => done",
    );
    // maxConcurrency 2: the third item waits for a free slot.
    expect(spelled).toContain(
      "list-files:ok: output.files has 3 items > review-file[0]:ok > review-file[1]:ok > review-file[2]:ok > summarize:ok => done",
    );
    expect(spelled).toContain(
      "list-files:ok: output.files has 1 item > review-file[0]:grant-suspended => suspended",
    );
  });

  it("under fail-fast, fails at the first failing item, and joins an empty list", () => {
    const runs = runsOf({ kind: "fail-fast" });
    expect(runs).toContain("list:ok: output.files has 0 items > review:ok => done");
    expect(runs).toContain(
      "list:ok: output.files has 2 items > test[0]:retries-exhausted => failed",
    );
    expect(runs).toContain(
      "list:ok: output.files has 2 items > test[0]:ok > test[1]:retries-exhausted => failed",
    );
    expect(runs).toContain(
      "list:ok: output.files has 2 items > test[0]:ok > test[1]:ok > review:ok => done",
    );
  });

  it("under any, joins on the first ok item and fails when every item failed", () => {
    const runs = runsOf({ kind: "any" });
    expect(runs).toContain("list:ok: output.files has 2 items > test[0]:ok > review:ok => done");
    expect(runs).toContain(
      "list:ok: output.files has 2 items > test[0]:retries-exhausted > test[1]:retries-exhausted => failed",
    );
  });

  it("under quorum k, fails a list shorter than k, joins at k ok items and fails once k cannot be met", () => {
    const runs = runsOf({ kind: "quorum", k: 2 });
    expect(runs).toContain("list:ok: output.files has 1 item => failed");
    expect(runs).toContain(
      "list:ok: output.files has 3 items > test[0]:ok > test[1]:ok > review:ok => done",
    );
    expect(runs).toContain(
      "list:ok: output.files has 3 items > test[0]:ok > test[1]:retries-exhausted > test[2]:retries-exhausted => failed",
    );
  });

  it("fails a list one item longer than maxItems, as the run does", () => {
    const runs = runsOf({ kind: "all-settled" }, { maxItems: 2 });
    expect(runs).toContain("list:ok: output.files has 3 items => failed");
    expect(runs.some((r) => r.includes("has 4 items"))).toBe(false);
    expect(runsOf({ kind: "all-settled" }, { maxItems: 40 })).toContain(
      "list:ok: output.files has 41 items => failed",
    );
  });

  it("settles a group's items first to last: items are alike, so no path is the same with two items swapped", () => {
    const runs = runsOf({ kind: "all-settled" });
    expect(
      runs.some((r) => r.includes("test[1]") && r.indexOf("test[1]") < r.indexOf("test[0]")),
    ).toBe(false);
    const items = (r: string) => r.match(/test\[\d\]/g) ?? [];
    expect(runs.filter((r) => new Set(items(r)).size !== items(r).length)).toEqual([]);
    // Each sequence of outcomes once, the first item settling first: four, not eight.
    const ended = runs.flatMap(
      (r) => /has 2 items > (test\[0\]:\S+ > test\[1\]:\S+)/.exec(r)?.[1] ?? [],
    );
    expect(new Set(ended)).toEqual(
      new Set([
        "test[0]:ok > test[1]:ok",
        "test[0]:ok > test[1]:retries-exhausted",
        "test[0]:retries-exhausted > test[1]:ok",
        "test[0]:retries-exhausted > test[1]:retries-exhausted",
      ]),
    );
  });

  it("lists a path for each list length among the paths covering the transitions", async () => {
    const { paths, untaken } = pipelinePaths(mapped({ kind: "fail-fast" }), {
      cover: "transitions",
    });
    const lengths = new Set(
      paths.map((p) => /has (\d+) item/.exec(p.steps[0]?.outcome ?? "")?.[1]),
    );
    expect(lengths).toEqual(new Set(["0", "1", "2", undefined]));
    expect(untaken).toEqual([
      {
        transition: expect.stringContaining("list refused"),
        reason: expect.stringContaining("declare maxItems to have a path with one item too many"),
      },
    ]);
  });

  it("walks a list in ctx at the length the paths' ctx gives it", () => {
    const pipeline = pipelineOf({
      context: {
        type: "object",
        properties: { files: { type: "array", items: { type: "string" } } },
      },
      stages: [llm("plan"), llm("test"), llm("review")],
      next: {
        plan: {
          kind: "map",
          over: "ctx.files",
          stage: "test",
          join: "review",
          policy: { kind: "fail-fast" },
        },
      },
    });
    const { paths } = pipelinePaths(pipeline, { ctx: { files: ["a", "b"] } });
    expect(paths.map((p) => spell(p.steps))).toContain(
      "plan:ok > test[0]:ok > test[1]:ok > review:ok",
    );
  });

  it("refuses a map the model cannot produce a list for with Validation/MapNotModelled, saying why", () => {
    const pipeline = pipelineOf({
      id: "over-parsed",
      stages: [code("list", () => ({ verdict: "ok" })), llm("test"), llm("review")],
      next: {
        list: {
          kind: "map",
          over: "parsed.files",
          stage: "test",
          join: "review",
          policy: { kind: "any" },
        },
      },
    });
    expect(() => pipelinePaths(pipeline)).toThrow(
      expect.objectContaining({
        code: "Validation/MapNotModelled",
        message: expect.stringContaining("list is a code stage, which has no parsed payload"),
      }),
    );
  });
});
