import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { demoProject, runPipelineIn, storeCommand, storeOf, summaryOf } from "../support/cli.js";
import { CODE_REVIEW_REPLIES } from "../support/code-review-replies.js";
import { PROVIDERS, TEST_KEY } from "../support/hosted-models.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { tempDir } from "../support/stages.js";

let server: LlmServer | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await server?.close();
  server = undefined;
});

/** `stagechart run code-review` headless on `model`, in `project` with its own store. */
const codeReview = (project: string, task: string, model: string, ...extra: string[]) =>
  runPipelineIn(project, "code-review", task, "--model", model, "--headless", "--json", ...extra);

/** Every byte the run store holds on disk: the database, its write-ahead log, its live runs' marks. */
const storeBytes = (dir: string) =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name)).toString("latin1"))
    .join("\n");

describe("stagechart run on a hosted model", () => {
  it("runs code-review to done against an openai-compatible server", async () => {
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    const project = demoProject();
    const run = await codeReview(
      project,
      "refactor auth module",
      `openai-compatible:${server.origin}/v1#test-model`,
    );

    expect(summaryOf(run.stdout)).toMatchObject({ status: "done" });
    expect(run.code).toBe(0);
    expect(server.requests).toHaveLength(CODE_REVIEW_REPLIES.length);
    expect(readFileSync(join(project, "src/auth.ts"), "utf8")).toContain(
      "export const authentication",
    );
  });

  it("keeps the model's replies whole when its key is a short placeholder found in them", async () => {
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", "a");
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    const project = demoProject();
    const run = await codeReview(project, "rename", `openai-compatible:${server.origin}/v1#m`);

    expect(summaryOf(run.stdout)).toMatchObject({ status: "done" });
    expect(readFileSync(join(project, "src/auth.ts"), "utf8")).toContain(
      "export const authentication",
    );
    const shown = await storeCommand(project, "show", summaryOf(run.stdout).runId, "--json");
    expect(JSON.parse(shown.stdout).output).toMatchObject({
      summary: "The rename matches the plan.",
    });
    expect(shown.stdout).not.toContain("[redacted]");
  });

  it("fails before any request on a model declared without tool calling", async () => {
    server = await startLlmServer([]);
    const run = await codeReview(
      demoProject(),
      "t",
      `openai-compatible:${server.origin}/v1#gemma:2b?tools=false`,
    );

    expect(run.code).toBe(1);
    expect(summaryOf(run.stdout)).toMatchObject({
      status: "failed",
      error: { code: "ProviderCapability/MissingToolCalling" },
    });
    expect(server.requests).toHaveLength(0);
  });

  it("shows the tokens the provider reported, and their cost at the given price, per stage and for the run", async () => {
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    const project = demoProject();
    const prices = join(project, "prices.yaml");
    // $1 per million input tokens, $2 per million output: cost = (in + 2 × out) / 1e6.
    writeFileSync(prices, "openai-compatible:test-model: { input: 1, output: 2 }\n");
    const run = await codeReview(
      project,
      "t",
      `openai-compatible:${server.origin}/v1#test-model`,
      "--prices",
      prices,
    );
    const { runId } = summaryOf(run.stdout);
    const cost = (input: number, output: number) => expect.closeTo((input + 2 * output) / 1e6, 12);

    const json = JSON.parse((await storeCommand(project, "show", runId, "--json")).stdout);
    expect(json.tokens).toEqual({
      stages: [
        {
          stageId: "plan",
          stageExecutionId: `${runId}/plan/1`,
          turns: 3,
          inputTokens: 1620,
          outputTokens: 123,
          totalTokens: 1743,
          costUsd: cost(1620, 123),
          unpricedTurns: 0,
        },
        {
          stageId: "execute",
          stageExecutionId: `${runId}/execute/1`,
          turns: 2,
          inputTokens: 1540,
          outputTokens: 92,
          totalTokens: 1632,
          costUsd: cost(1540, 92),
          unpricedTurns: 0,
        },
        {
          stageId: "review",
          stageExecutionId: `${runId}/review/1`,
          turns: 1,
          inputTokens: 640,
          outputTokens: 33,
          totalTokens: 673,
          costUsd: cost(640, 33),
          unpricedTurns: 0,
        },
      ],
      total: {
        inputTokens: 3800,
        outputTokens: 248,
        totalTokens: 4048,
        costUsd: cost(3800, 248),
        unpricedTurns: 0,
      },
      unpricedModels: [],
    });
    const text = (await storeCommand(project, "show", runId)).stdout;
    expect(text).toContain("tokens: 4048 (3800 in, 248 out) · $0.004296\n");
    expect(text).toContain(`  ${runId}/execute/1  1632 (1540 in, 92 out) · $0.001724\n`);
  });

  it("refuses to start without the provider's key, naming the variable", async () => {
    vi.stubEnv("OPENAI_API_KEY", "");
    const run = await runPipelineIn(
      demoProject(),
      "code-review",
      "t",
      "--model",
      "openai:gpt-4.1",
      "--json",
    );
    expect(run.code).toBe(1);
    expect(summaryOf(run.stdout).error).toMatchObject({
      code: "Validation/ModelKeyMissing",
      context: { variable: "OPENAI_API_KEY" },
    });
  });

  it("never writes the key to the store, the audit log or a cassette, even when the provider echoes it", async () => {
    server = await startLlmServer([
      { status: 503, message: `Incorrect API key provided: ${TEST_KEY}` },
      ...CODE_REVIEW_REPLIES,
    ]);
    vi.stubEnv("OPENAI_API_KEY", TEST_KEY);
    vi.stubEnv("OPENAI_BASE_URL", `${server.origin}/v1?key=${TEST_KEY}`);
    const project = demoProject();
    const cassette = join(tempDir(), "run.cassette.json");
    const run = await codeReview(
      project,
      "refactor auth module",
      "openai:test-model",
      "--record",
      cassette,
    );
    const { runId, status } = summaryOf(run.stdout);
    expect(status).toBe("done");
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);

    const audit = await storeCommand(project, "audit", runId, "--json");
    const show = await storeCommand(project, "show", runId, "--json");
    expect(audit.stdout).toContain("Incorrect API key provided: [redacted]");
    const stored = storeBytes(dirname(storeOf(project)));
    for (const text of [audit.stdout, show.stdout, stored, readFileSync(cassette, "utf8")])
      expect(text).not.toContain(TEST_KEY);
  });
});

describe.each(PROVIDERS)("code-review on $provider", (p) => {
  it("runs to done through a grant it suspends on and a resume from the stored conversation", async () => {
    server = await startLlmServer(CODE_REVIEW_REPLIES);
    for (const [name, value] of Object.entries(p.env(server))) vi.stubEnv(name, value);
    const project = demoProject();

    const run = await codeReview(
      project,
      "refactor auth module",
      p.spec(server),
      "--on-grant",
      "suspend",
    );
    const { runId, status, waiting } = summaryOf(run.stdout);
    expect(status).toBe("suspended");
    const deny = ["--deny", waiting[0].proposalId, "--headless", "--json"];
    const resumed = await storeCommand(project, "resume", runId, ...deny);

    expect(summaryOf(resumed.stdout)).toMatchObject({ status: "done" });
    expect(server.requests.map((r) => [r.path, r.refused])).toEqual(
      CODE_REVIEW_REPLIES.map(() => [p.path, undefined]),
    );
    expect(readFileSync(join(project, "src/auth.ts"), "utf8")).toContain(
      "export const authentication",
    );
  });
});

describe("a key in a base URL (http://user:KEY@host/v1)", () => {
  const URL_KEY = "canary-url-7d2e9b-never-store-me";
  const VARIABLE_KEY = "canary-variable-51a8c3-never-store-me";
  const occurrences = (text: string) =>
    text.split(URL_KEY).length - 1 + text.split(VARIABLE_KEY).length - 1;

  it("goes to the client only: never stored, printed or recorded, on failing paths and in echoed replies too", async () => {
    server = await startLlmServer([
      { status: 503, message: `no capacity for ${URL_KEY} (also ${VARIABLE_KEY})` },
      { text: `Your keys are ${URL_KEY} and ${VARIABLE_KEY}.` },
      ...CODE_REVIEW_REPLIES,
    ]);
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", VARIABLE_KEY);
    const project = demoProject();
    const cassette = join(tempDir(), "run.cassette.json");
    const withKey = server.origin.replace("://", `://user:${URL_KEY}@`);
    const spec = `openai-compatible:${withKey}/v1#test-model`;

    const run = await codeReview(project, "t", spec, "--record", cassette, "--on-grant", "suspend");
    const { runId, status, waiting } = summaryOf(run.stdout);
    expect(status).toBe("suspended");
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${URL_KEY}`);

    // The URL's key is not stored, so a resume needs the key variable, and says so.
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", "");
    const deny = ["--deny", waiting[0].proposalId, "--headless", "--json"];
    const refused = await storeCommand(project, "resume", runId, ...deny);
    expect(refused.code).toBe(1);
    expect(summaryOf(refused.stdout).error).toMatchObject({
      code: "Validation/ModelKeyMissing",
      context: { variable: "OPENAI_COMPATIBLE_API_KEY" },
    });
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", VARIABLE_KEY);
    const resumed = await storeCommand(project, "resume", runId, ...deny);
    expect(summaryOf(resumed.stdout).status).toBe("done");
    expect(server.requests.at(-1)?.headers.authorization).toBe(`Bearer ${VARIABLE_KEY}`);

    const malformed = await runPipelineIn(
      project,
      "code-review",
      "t",
      "--json",
      "--model",
      `openai-compatible:${withKey}/v1`,
    );
    expect(summaryOf(malformed.stdout).error).toMatchObject({
      code: "Validation/ModelSpecInvalid",
    });
    const unknown = await runPipelineIn(
      project,
      "code-review",
      "t",
      "--json",
      "--model",
      `gemini:${withKey}`,
    );
    expect(summaryOf(unknown.stdout).error).toMatchObject({
      code: "Validation/ModelSpecUnsupported",
    });

    const audit = await storeCommand(project, "audit", runId, "--json");
    const show = await storeCommand(project, "show", runId, "--json");
    expect(audit.stdout).toContain("no capacity for [redacted]");
    const printed = [run, refused, resumed, malformed, unknown, audit, show].flatMap((r) => [
      r.stdout,
      r.stderr,
    ]);
    const stored = storeBytes(dirname(storeOf(project)));
    expect(printed.map(occurrences)).toEqual(printed.map(() => 0));
    expect(occurrences(stored)).toBe(0);
    const recorded = readFileSync(cassette, "utf8");
    expect(recorded).toContain("Your keys are [redacted] and [redacted].");
    expect(occurrences(recorded)).toBe(0);
  });
});
