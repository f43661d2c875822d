import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runTraceIds } from "../../src/runtime/tracing/run-spans.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import {
  demoProject,
  REPO_ROOT,
  runIn,
  runPipelineIn,
  storeCommand,
  storeOf,
  summaryOf,
} from "../support/cli.js";
import { type OtlpReceiver, otlpReceiver, type ReceivedSpan } from "../support/otlp/receiver.js";

const OTEL_VARIABLES = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_PROTOCOL",
  "OTEL_TRACES_EXPORTER",
  "OTEL_SDK_DISABLED",
  "OTEL_EXPORTER_OTLP_TIMEOUT",
];

let receiver: OtlpReceiver;
beforeEach(async () => {
  receiver = await otlpReceiver();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
});
afterEach(async () => {
  for (const name of OTEL_VARIABLES) delete process.env[name];
  await receiver.close();
});

function auditOf(project: string, runId: string) {
  const opened = SqliteStore.open(storeOf(project));
  if (!opened.ok) throw opened.error;
  try {
    return opened.value.auditOf(runId);
  } finally {
    opened.value.close();
  }
}

const byName = (prefix: string) => (span: ReceivedSpan) => span.name.startsWith(prefix);
const childrenOf = (parent: ReceivedSpan) =>
  receiver.spans.filter((span) => span.parentSpanId === parent.spanId);

describe("a run's spans, sent where the OTEL_* variables say", () => {
  it("form a tree run → stage execution → attempt → model and tool calls, siblings side by side", async () => {
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review-parallel", "rename auth", "--json");
    expect(run.code, run.stderr).toBe(0);
    const { runId } = summaryOf(run.stdout);
    const ids = runTraceIds(runId);

    // Sent before the command returned: nothing is left for a process that has exited.
    expect(receiver.requests.every((r) => r.contentType === "application/x-protobuf")).toBe(true);
    expect(receiver.spans.every((span) => span.traceId === ids.traceId)).toBe(true);
    const roots = receiver.spans.filter((span) => span.parentSpanId === undefined);
    expect(roots).toHaveLength(1);
    const [root] = roots as [ReceivedSpan];
    expect(root).toMatchObject({
      spanId: ids.spanId,
      name: "stagechart.run code-review-parallel",
      status: { code: "unset" },
      attributes: {
        "stagechart.run.id": runId,
        "stagechart.run.status": "done",
        "stagechart.run.session": "start",
      },
      resource: { "service.name": "stagechart" },
    });

    const stages = childrenOf(root);
    expect(stages.every((span) => span.name.startsWith("stagechart.stage "))).toBe(true);
    expect(new Set(stages.map((s) => s.attributes["stagechart.stage.id"]))).toEqual(
      new Set(["plan", "execute", "test", "lint", "review"]),
    );
    const stage = (id: string) => stages.find((s) => s.attributes["stagechart.stage.id"] === id);
    const [test, lint] = [stage("test"), stage("lint")] as [ReceivedSpan, ReceivedSpan];
    // Parallel siblings: each began before the other ended.
    expect(test.startMs).toBeLessThanOrEqual(lint.endMs);
    expect(lint.startMs).toBeLessThanOrEqual(test.endMs);
    for (const span of stages) {
      expect(span.startMs).toBeGreaterThanOrEqual(root.startMs);
      expect(span.endMs).toBeLessThanOrEqual(root.endMs);
      expect(span.attributes["stagechart.stage.verdict"]).toBe("ok");
      const attempts = childrenOf(span);
      expect(attempts.length).toBeGreaterThan(0);
      expect(attempts.every((a) => a.name.startsWith("stagechart.attempt "))).toBe(true);
    }

    // One span per model call and per tool call the run audited, each under its attempt.
    const events = auditOf(project, runId);
    const calls = receiver.spans.filter(byName("chat"));
    expect(calls).toHaveLength(events.filter((e) => e.type === "ModelTurn").length);
    const tools = receiver.spans.filter(byName("execute_tool "));
    expect(tools).toHaveLength(
      events.filter((e) => e.type === "ToolSucceeded" || e.type === "ToolFailed").length,
    );
    const attemptIds = new Set(
      stages.flatMap((s) => childrenOf(s)).map((attempt) => attempt.spanId),
    );
    for (const call of [...calls, ...tools])
      expect(attemptIds.has(call.parentSpanId ?? "")).toBe(true);
    const [first] = calls as [ReceivedSpan];
    expect(first.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.system": "scripted",
      "gen_ai.request.model": "code-review-parallel.script.yaml",
      "gen_ai.response.finish_reasons": ["tool-calls"],
    });
    expect(first.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
    expect(first.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    expect(tools[0]?.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool" });
    // The tokens of the run's calls, summed on its span.
    const sum = calls.reduce((n, c) => n + Number(c.attributes["gen_ai.usage.input_tokens"]), 0);
    expect(root.attributes["stagechart.usage.input_tokens"]).toBe(sum);

    // Nothing anybody said is exported unless asked: no task, no reply, no tool arguments.
    const sent = Buffer.concat(receiver.requests.map((r) => r.body)).toString("latin1");
    expect(sent).not.toContain("rename auth");
    expect(sent).not.toContain("authentication");
    for (const span of receiver.spans) {
      expect(span.attributes).not.toHaveProperty("gen_ai.output.messages");
      expect(span.attributes).not.toHaveProperty("gen_ai.tool.call.arguments");
    }
  });

  it("carry what was said with --trace-content, in JSON when the protocol says http/json", async () => {
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
    const project = demoProject();
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename auth",
      "--headless",
      "--trace-content",
      "--json",
    );
    expect(run.code, run.stderr).toBe(0);
    expect(receiver.requests.every((r) => r.contentType === "application/json")).toBe(true);
    const calls = receiver.spans.filter(byName("chat"));
    expect(calls.length).toBeGreaterThan(0);
    const replies = calls.map((c) => String(c.attributes["gen_ai.output.messages"]));
    expect(replies.some((reply) => reply.includes("export const authentication"))).toBe(true);
    const firstInput = JSON.parse(String(calls[0]?.attributes["gen_ai.input.messages"]));
    expect(JSON.stringify(firstInput)).toContain("rename auth");
    const tools = receiver.spans.filter(byName("execute_tool "));
    expect(tools.every((t) => typeof t.attributes["gen_ai.tool.call.arguments"] === "string")).toBe(
      true,
    );
  });

  it("mark a failed stage and its run as errors, with the code, and the budget's refusal as an event", async () => {
    const project = demoProject();
    const pipeline = readFileSync(join(REPO_ROOT, "machines/code-review.yaml"), "utf8")
      .replaceAll("../stages/", `${join(REPO_ROOT, "stages")}/`)
      .concat("budget:\n  stages:\n    plan: { maxOutputTokens: 1 }\n");
    writeFileSync(join(project, "tight.yaml"), pipeline);
    copyFileSync(
      join(REPO_ROOT, "machines/code-review.script.yaml"),
      join(project, "tight.script.yaml"),
    );
    const run = await runIn(
      project,
      "run",
      join(project, "tight.yaml"),
      "--task",
      "rename auth",
      "--headless",
      "--json",
    );
    expect(summaryOf(run.stdout)).toMatchObject({ status: "failed" });
    const [root] = receiver.spans.filter((s) => s.parentSpanId === undefined) as [ReceivedSpan];
    expect(root.status.code).toBe("error");
    expect(root.attributes["stagechart.run.status"]).toBe("failed");
    const [plan] = childrenOf(root);
    expect(plan?.status).toMatchObject({ code: "error" });
    expect(plan?.status.message).toContain("Cancellation/BudgetExceeded");
    const [attempt] = childrenOf(plan as ReceivedSpan);
    expect(attempt?.events.find((e) => e.name === "BudgetExceeded")?.attributes).toMatchObject({
      "stagechart.scope": "stage",
      "stagechart.limit": "maxOutputTokens",
      "stagechart.max": 1,
    });
  });

  it("join a resumed run's spans to its trace: the session under the run's first span, linked to it", async () => {
    const project = demoProject();
    const started = await runPipelineIn(
      project,
      "code-review",
      "rename auth",
      "--headless",
      "--on-grant",
      "suspend",
      "--json",
    );
    const { runId, status } = summaryOf(started.stdout);
    expect(status).toBe("suspended");
    const ids = runTraceIds(runId);
    const firstSession = receiver.spans.find((s) => s.parentSpanId === undefined);
    expect(firstSession).toMatchObject({
      spanId: ids.spanId,
      attributes: { "stagechart.run.status": "suspended" },
    });
    // The grant request the run suspended on: a span that ended with the session.
    expect(receiver.spans.filter(byName("stagechart.grant Edit"))).toHaveLength(1);
    const callsBefore = receiver.spans.filter(byName("chat")).length;

    const proposalId = auditOf(project, runId).find((e) => e.type === "GrantRequested")?.payload
      .proposalId as string;
    const resumed = await storeCommand(
      project,
      "resume",
      runId,
      "--deny",
      proposalId,
      "--headless",
      "--json",
    );
    expect(summaryOf(resumed.stdout), resumed.stderr).toMatchObject({ status: "done" });
    const sessions = receiver.spans.filter(byName("stagechart.run "));
    expect(sessions).toHaveLength(2);
    const second = sessions[1] as ReceivedSpan;
    expect(second).toMatchObject({
      traceId: ids.traceId,
      parentSpanId: ids.spanId,
      attributes: { "stagechart.run.session": "resume", "stagechart.run.status": "done" },
    });
    expect(second.links).toEqual([
      { traceId: ids.traceId, spanId: ids.spanId, attributes: { "stagechart.link": "resumed" } },
    ]);
    expect(receiver.spans.every((span) => span.traceId === ids.traceId)).toBe(true);
    // Every model call once: the turns the resume replayed from its journal are not sent again.
    const turns = new Set(
      auditOf(project, runId)
        .filter((e) => e.type === "ModelTurn")
        .map((e) => `${e.stageExecutionId}/${e.attempt}/${String(e.payload.turn)}`),
    );
    expect(receiver.spans.filter(byName("chat"))).toHaveLength(turns.size);
    expect(turns.size).toBeGreaterThan(callsBefore);
  });

  it("give a fork a trace of its own, its first span linked to the run it was forked from", async () => {
    const project = demoProject();
    const source = await runPipelineIn(
      project,
      "code-review",
      "rename auth",
      "--headless",
      "--json",
    );
    const { runId } = summaryOf(source.stdout);
    const fork = await storeCommand(
      project,
      ...["fork", runId, "--at", "2", "--run-id", "forked-1", "--headless", "--json"],
    );
    expect(summaryOf(fork.stdout), fork.stderr).toMatchObject({
      runId: "forked-1",
      status: "done",
    });
    const ids = runTraceIds("forked-1");
    const [session] = receiver.spans.filter((s) => s.traceId === ids.traceId && !s.parentSpanId);
    expect(session).toMatchObject({
      spanId: ids.spanId,
      attributes: { "stagechart.run.id": "forked-1", "stagechart.run.session": "start" },
      links: [
        {
          ...runTraceIds(runId),
          attributes: { "stagechart.link": "forked", "stagechart.run.id": runId },
        },
      ],
    });
  });

  it.each([
    ["an exporter other than otlp", "OTEL_TRACES_EXPORTER", "zipkin"],
    ["the grpc protocol", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"],
  ])("refuse %s before the run starts, with a code", async (_what, name, value) => {
    process.env[name] = value;
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "rename auth", "--headless");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^Validation\/TracingInvalid: /);
    expect(run.stderr).not.toMatch(/\bat .+:\d+:\d+/);
    expect(receiver.requests).toHaveLength(0);
  });

  it("that cannot be sent cost a warning with a code, never the run or its exit code", async () => {
    await receiver.close();
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = "1000";
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "rename auth", "--headless", "--json");
    expect(run.code).toBe(0);
    expect(summaryOf(run.stdout)).toMatchObject({ status: "done" });
    const warnings = run.stderr.split("\n").filter((line) => line.includes("TraceExportFailed"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^stagechart: warning: ExtensionHost\/TraceExportFailed: the run's spans were not all sent: /,
    );
    expect(run.stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });

  it("are not made when OTEL_SDK_DISABLED is true", async () => {
    process.env.OTEL_SDK_DISABLED = "true";
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "rename auth", "--headless");
    expect(run.code).toBe(0);
    expect(receiver.requests).toHaveLength(0);
  });
});
