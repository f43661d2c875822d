import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { afterEach, describe, expect, it } from "vitest";
import type { GrantRequest } from "../../src/compiler/stage-types.js";
import type { HostOptions } from "../../src/runtime/host.js";
import { callbackInteractor } from "../../src/runtime/interactors.js";
import { type RunHandle, startRun } from "../../src/runtime/run.js";
import { builtinTools, type McpServers } from "../../src/tools/index.js";
import { attached, demoServer, serverLog, untilLogged } from "../support/mcp.js";
import { llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

const open: McpServers[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((servers) => servers.close()));
});

/** A one-stage pipeline: Plan, whose envelope is `allowedTools`. */
const planWith = (allowedTools: string[]) =>
  pipelineOf({
    stages: [
      llm("plan", (text) =>
        text.replace(/^allowedTools: .*$/m, `allowedTools: ${JSON.stringify(allowedTools)}`),
      ),
    ],
  });

/** Plan's script: the given calls, one per turn, then a valid completion. */
const script = (...calls: string[]) => `
stages:
  plan:
${calls.map((call) => `    - ${call}`).join("\n")}
    - { tool: submit_plan, args: { summary: "done", steps: ["one"] } }
`;

/** A host on the scripted model with the built-in tools plus the demo server's, and every model call captured. */
async function mcpHarness(scriptText: string, options: Partial<HostOptions> = {}) {
  const server = demoServer();
  const servers = await attached(server);
  open.push(servers);
  const h = harness(scriptText, { tools: [...builtinTools(), ...servers.tools], ...options });
  const calls: LanguageModelV3CallOptions[] = [];
  const model = h.host.model.model;
  const host = {
    ...h.host,
    model: {
      ...h.host.model,
      model: {
        ...model,
        doGenerate: (call: LanguageModelV3CallOptions) => {
          calls.push(call);
          return model.doGenerate(call);
        },
      },
    },
  };
  return { ...h, host, calls, log: server.log };
}

function started(handle: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!handle.ok) throw handle.error;
  return handle.value;
}

const toolEvents = (events: { type: string; payload: Record<string, unknown> }[]) =>
  events
    .filter((e) => e.type.startsWith("Tool") || e.type === "GrantRequested")
    .map((e) =>
      [e.type, e.payload.tool, e.payload.source, e.payload.code].filter(Boolean).join(" "),
    );

describe("MCP tools in a stage", () => {
  it("are called from the envelope, approved with source envelope, and their result reaches the model's next turn", async () => {
    const h = await mcpHarness(script("{ tool: mcp__demo__lookup, args: { key: auth } }"));
    const run = started(
      await startRun(planWith(["Read", "mcp__demo__lookup"]), {
        host: h.host,
        runId: "run-1",
        task: "t",
      }),
    );
    expect((await run.result).status).toBe("done");

    expect(toolEvents(h.audit.of("run-1"))).toEqual([
      "ToolProposed mcp__demo__lookup",
      "ToolApproved mcp__demo__lookup envelope",
      "ToolSucceeded mcp__demo__lookup",
    ]);
    const offered = h.calls[0]?.tools?.find((t) => t.name === "mcp__demo__lookup");
    expect(offered).toMatchObject({
      description: "Looks up which file owns a concern",
      inputSchema: { properties: { key: { type: "string" } }, required: ["key"] },
    });
    const nextTurn = h.calls[1]?.prompt.at(-1);
    expect(nextTurn).toMatchObject({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolName: "mcp__demo__lookup",
          output: { type: "text", value: "src/auth.ts owns login and tokens" },
        },
      ],
    });
  });

  it("go through a grant request when outside the envelope: the interactor sees the MCP call, approval runs it once", async () => {
    const requests: GrantRequest[] = [];
    const h = await mcpHarness(script("{ tool: mcp__demo__delete, args: { id: '7' } }"), {
      interactors: [
        callbackInteractor("user", (request) => {
          requests.push(request);
          return "approve";
        }),
      ],
    });
    const run = started(
      await startRun(planWith(["mcp__demo__lookup"]), { host: h.host, runId: "run-1", task: "t" }),
    );
    expect((await run.result).status).toBe("done");
    expect(requests).toMatchObject([{ tool: "mcp__demo__delete", argsSummary: "7" }]);
    expect(toolEvents(h.audit.of("run-1"))).toEqual([
      "ToolProposed mcp__demo__delete",
      "GrantRequested mcp__demo__delete",
      "ToolApproved mcp__demo__delete grant",
      "ToolSucceeded mcp__demo__delete",
    ]);
    expect(serverLog(h.log)).toContain("delete 7");
  });

  it("are denied outside the envelope when nobody can grant them (headless), and the stage goes on", async () => {
    const h = await mcpHarness(script("{ tool: mcp__demo__delete, args: { id: '7' } }"));
    const run = started(await startRun(planWith([]), { host: h.host, runId: "run-1", task: "t" }));
    expect((await run.result).status).toBe("done");
    expect(toolEvents(h.audit.of("run-1"))).toContain(
      "ToolDenied mcp__demo__delete headless ToolTerminal/NoInteractor",
    );
    expect(serverLog(h.log)).not.toContain("delete 7");
  });

  it("are stopped by guard rules on their arguments, even inside the envelope", async () => {
    const h = await mcpHarness(
      script(
        "{ tool: mcp__demo__delete, args: { id: '7' } }",
        "{ tool: mcp__demo__delete, args: { id: '8' } }",
      ),
      { guards: ["mcp__demo__delete(7)"] },
    );
    const run = started(
      await startRun(planWith(["mcp__demo__delete"]), { host: h.host, runId: "run-1", task: "t" }),
    );
    expect((await run.result).status).toBe("done");
    expect(toolEvents(h.audit.of("run-1"))).toEqual([
      "ToolProposed mcp__demo__delete",
      "ToolApproved mcp__demo__delete envelope",
      "ToolDenied mcp__demo__delete guard ToolTerminal/GuardDenied",
      "ToolProposed mcp__demo__delete",
      "ToolApproved mcp__demo__delete envelope",
      "ToolSucceeded mcp__demo__delete",
    ]);
    expect(serverLog(h.log).filter((line) => line.startsWith("delete"))).toEqual(["delete 8"]);
  });

  it("fail as typed tool results — the server's error, then the server gone — and the stage goes on", async () => {
    const h = await mcpHarness(
      script(
        "{ tool: mcp__demo__broken, args: {} }",
        "{ tool: mcp__demo__crash, args: {} }",
        "{ tool: mcp__demo__lookup, args: { key: auth } }",
      ),
    );
    const envelope = ["mcp__demo__broken", "mcp__demo__crash", "mcp__demo__lookup"];
    const run = started(
      await startRun(planWith(envelope), { host: h.host, runId: "run-1", task: "t" }),
    );
    expect((await run.result).status).toBe("done");
    const failures = h.audit
      .of("run-1")
      .filter((e) => e.type === "ToolFailed")
      .map((e) => `${String(e.payload.tool)} ${String(e.payload.code)}`);
    expect(failures).toEqual([
      "mcp__demo__broken ToolTerminal/McpToolError",
      "mcp__demo__crash ToolTransient/McpServerUnavailable",
      "mcp__demo__lookup ToolTransient/McpServerUnavailable",
    ]);
    const brokenResult = h.calls[1]?.prompt.at(-1);
    expect(brokenResult).toMatchObject({
      role: "tool",
      content: [
        {
          output: {
            value: { code: "ToolTerminal/McpToolError", message: "the lookup table is locked" },
          },
        },
      ],
    });
  });

  it("abort a slow call in flight when the run is cancelled", async () => {
    const h = await mcpHarness(script("{ tool: mcp__demo__slow, args: { ms: 10000 } }"));
    const run = started(
      await startRun(planWith(["mcp__demo__slow"]), { host: h.host, runId: "run-1", task: "t" }),
    );
    await untilLogged(h.log, "slow started");
    run.send({ type: "CANCEL", reason: "test" });
    expect((await run.result).status).toBe("cancelled");
    await untilLogged(h.log, "slow cancelled");
  });
});
