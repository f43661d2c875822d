import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { APICallError, type LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { readCassette } from "../../src/models/cassette.js";
import { recordModel } from "../../src/models/recorder.js";
import { createReplayModel } from "../../src/models/replay.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { StagechartCallInfo } from "../../src/models/types.js";
import { tempDir } from "../support/stages.js";

const scripted = (yaml: string) => {
  const parsed = parseScript(yaml, "t.script.yaml");
  if (!parsed.ok) throw new Error("bad script");
  return createScriptedModel(parsed.value);
};

const call = (
  info: Partial<StagechartCallInfo> & { text?: string } = {},
): LanguageModelV3CallOptions => {
  const { text = "hello", ...rest } = info;
  const place = {
    runId: "run-1",
    stageId: "plan",
    stageExecutionId: "run-1/plan/1",
    attempt: 1,
    turn: 1,
    position: 0,
    ...rest,
  };
  return {
    prompt: [{ role: "user", content: [{ type: "text", text: `${text} in ${place.runId}` }] }],
    providerOptions: { stagechart: { ...place } },
  };
};

const exchangesIn = (file: string) => {
  const cassette = readCassette(file);
  if (!cassette.ok) throw cassette.error;
  return cassette.value.exchanges.map((e) => `${e.stageExecutionId}#${e.call}`);
};

describe("the cassette recorder", () => {
  it("continues the cassette of the same run (a resume with --record) and replaces another run's", async () => {
    const file = join(tempDir(), "c.json");
    const model = scripted("stages:\n  plan:\n    - text: one\n    - text: two\n");
    await recordModel(model, file).model.doGenerate(call({ position: 0 }));
    await recordModel(model, file).model.doGenerate(call({ position: 1, turn: 2 }));
    expect(exchangesIn(file)).toEqual(["run-1/plan/1#0", "run-1/plan/1#1"]);

    await recordModel(model, file).model.doGenerate(
      call({ runId: "run-2", stageExecutionId: "run-2/plan/1", position: 0 }),
    );
    expect(exchangesIn(file)).toEqual(["run-2/plan/1#0"]);
  });

  it("records a repeated call once (a call in flight at a crash is made again on resume)", async () => {
    const file = join(tempDir(), "c.json");
    const model = scripted("stages:\n  plan:\n    - text: one\n");
    await recordModel(model, file).model.doGenerate(call());
    await recordModel(model, file).model.doGenerate(call());
    expect(exchangesIn(file)).toEqual(["run-1/plan/1#0"]);
  });
});

describe("the replay model", () => {
  it("answers a replayed run under a new run id, failures included", async () => {
    const file = join(tempDir(), "c.json");
    const recorder = recordModel(
      scripted('stages:\n  plan:\n    - text: first\n    - { error: "overloaded", status: 503 }\n'),
      file,
    );
    await recorder.model.doGenerate(call());
    await expect(recorder.model.doGenerate(call({ turn: 2, position: 1 }))).rejects.toThrow();

    const cassette = readCassette(file);
    if (!cassette.ok) throw cassette.error;
    const replay = createReplayModel(cassette.value).model;
    const other = { runId: "run-9", stageExecutionId: "run-9/plan/1" };
    const first = await replay.doGenerate(call(other));
    expect(first.content).toEqual([{ type: "text", text: "first" }]);
    const failure = await Promise.resolve(
      replay.doGenerate(call({ ...other, turn: 2, position: 1 })),
    ).catch((error: unknown) => error);
    expect(APICallError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ statusCode: 503, isRetryable: true, message: "overloaded" });
  });

  it.each([
    [{ text: "changed" }, "the request (prompt and tools) differs"],
    [{ turn: 3 }, "the cassette recorded this call at attempt 1 turn 1"],
    [{ position: 7 }, "the cassette has no exchange for this call"],
  ])("refuses a call that does not match the recording: %o", async (change, why) => {
    const file = join(tempDir(), "c.json");
    await recordModel(scripted("stages:\n  plan:\n    - text: one\n"), file).model.doGenerate(
      call(),
    );
    const cassette = readCassette(file);
    if (!cassette.ok) throw cassette.error;
    await expect(
      createReplayModel(cassette.value).model.doGenerate(call(change)),
    ).rejects.toMatchObject({
      code: "Validation/ReplayMismatch",
      message: expect.stringContaining(why),
      context: { stageId: "plan" },
    });
  });

  it("explains a cassette that is missing, not JSON, of the wrong shape, or a FIFO (never waiting on it)", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "text.json"), "not json");
    writeFileSync(join(dir, "shape.json"), JSON.stringify({ version: 2, exchanges: [] }));
    execFileSync("mkfifo", [join(dir, "fifo.json")]);
    for (const name of ["missing.json", "text.json", "shape.json", "fifo.json"]) {
      expect(readCassette(join(dir, name))).toMatchObject({
        ok: false,
        error: { code: "Validation/CassetteInvalid" },
      });
    }
  });
});
