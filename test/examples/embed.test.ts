import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { demoProject, REPO_ROOT, summaryOf } from "../support/cli.js";
import { CODE_REVIEW_REPLIES } from "../support/code-review-replies.js";
import {
  type LlmServer,
  type ReceivedRequest,
  type ServerReply,
  startLlmServer,
} from "../support/llm-server.js";

// The example imports the built package (`stagechart` resolves to dist/): `npm run build` first.
const APP = join(REPO_ROOT, "examples/embed/app.mjs");

let server: LlmServer | undefined;
afterEach(() => server?.close());

/** The example app in a process of its own, on the test server's model. */
function app(project: string, model: string): { child: ChildProcess; stdout: () => string } {
  const child = spawn(
    process.execPath,
    [APP, "--state", join(project, "app.json"), "--store", join(project, "runs.db")].concat([
      "--root",
      project,
      "--model",
      model,
    ]),
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout?.on("data", (chunk) => {
    out += chunk;
  });
  return { child, stdout: () => out };
}

const messagesOf = (request: ReceivedRequest | undefined) =>
  (request?.body.messages as { role: string }[] | undefined)?.map((m) => m.role);

describe("examples/embed: an XState app that invokes code-review", () => {
  it("saves itself mid-run, exits, and a new process finishes the run with the whole conversation", async () => {
    // Execute's second call is never answered in the first process: it is stopped while waiting.
    const held: ServerReply = { hold: true };
    server = await startLlmServer([
      ...CODE_REVIEW_REPLIES.slice(0, 4),
      held,
      ...CODE_REVIEW_REPLIES.slice(4),
    ]);
    const project = demoProject();
    const model = `openai-compatible:${server.origin}/v1#test-model`;

    const first = app(project, model);
    await server.received(5);
    first.child.kill("SIGTERM");
    const [firstCode] = await once(first.child, "exit");
    expect(firstCode).toBe(0);
    expect(first.stdout()).toContain(`saved ${join(project, "app.json")}`);

    const second = app(project, model);
    const [secondCode] = await once(second.child, "exit");
    expect(secondCode).toBe(0);
    expect(second.stdout()).toContain("restored");
    expect(summaryOf(second.stdout())).toMatchObject({ app: "released", review: "done" });

    // The call in flight when the app stopped is asked again with the same conversation; nothing
    // recorded is asked again (7 requests: the held one, then 2 for the rest of the run).
    const { requests } = server;
    expect(requests).toHaveLength(7);
    expect(requests[4]?.aborted).toBe(true);
    expect(messagesOf(requests[5])).toEqual(messagesOf(requests[4]));
    expect(messagesOf(requests[5])).toEqual(["system", "user", "assistant", "tool"]);
    const { runId } = summaryOf(second.stdout()) as { runId: string };
    const store = SqliteStore.open(join(project, "runs.db"));
    if (!store.ok) throw store.error;
    expect(store.value.getRun(runId)).toMatchObject({ ok: true, value: { status: "done" } });
    const types = store.value.auditOf(runId).map((e) => e.type);
    expect(types.filter((t) => t === "RunStarted")).toHaveLength(1);
    expect(types.at(-1)).toBe("RunCompleted");
    store.value.close();
  });
});
