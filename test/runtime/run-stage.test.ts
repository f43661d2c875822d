import { existsSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { callbackInteractor } from "../../src/runtime/interactors.js";
import { rulesGrantPolicy } from "../../src/runtime/rules.js";
import { createStageActor, runStage } from "../../src/runtime/run-stage.js";
import { harness, loadStage, planResult, stageInput } from "../support/stage-harness.js";
import { withLine } from "../support/stages.js";

const PLAN_OK = `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`;

const EDIT_THEN_SUBMIT = `
stages:
  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: "'a'", new: "'b'" }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`;

const deny = callbackInteractor("test", () => "deny");
const approve = callbackInteractor("test", () => "approve");

describe("a stage execution", () => {
  it("renders the stage's own scalar fields into its system prompt", async () => {
    const h = harness(PLAN_OK);
    const stage = loadStage("plan", (text) =>
      text
        .replace("turnCap: 20", "turnCap: 20\ndescription: Plans a change")
        .concat(
          "\n{{stage.name}} ({{stage.description}}): {{stage.turnCap}} turns, then {{stage.completionTool}}; {{stage.resolutionPolicy}}.\n",
        ),
    );
    await runStage(h.host, stageInput(stage));
    expect(h.host.transcripts.read("run-1/plan/1")[0]).toMatchObject({
      role: "system",
      text: expect.stringContaining(
        "Plan (Plans a change): 20 turns, then submit_plan; retry-later.",
      ),
    });
  });

  it("runs code-review's Plan sequence: denied Edit, envelope Grep, submit_plan, Exit", async () => {
    const h = harness(
      `
stages:
  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: "'a'", new: "'b'" }
    - tool: Grep
      args: { pattern: auth }
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`,
      { interactors: [deny] },
    );
    const result = await runStage(h.host, stageInput(loadStage("plan")));

    expect(result).toEqual(planResult);
    expect(h.types()).toEqual([
      "StageSetup",
      "StageInit",
      "CheckGateOutcome",
      "ModelTurn",
      "ToolProposed",
      "GrantRequested",
      "ToolDenied",
      "ModelTurn",
      "ToolProposed",
      "ToolApproved",
      "ToolSucceeded",
      "ModelTurn",
      "StageAssertOutcome",
      "StageExited",
    ]);
    const events = h.audit.events;
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    for (const e of events) {
      expect(e).toMatchObject({
        runId: "run-1",
        stageId: "plan",
        stageExecutionId: "run-1/plan/1",
        attempt: 1,
      });
      expect(Date.parse(e.at)).not.toBeNaN();
    }
    const byType = (type: string) => events.filter((e) => e.type === type);
    expect(byType("StageSetup")[0]?.payload).toEqual({
      envelope: ["Read", "Grep", "Glob"],
      upstream: 0,
    });
    expect(byType("GrantRequested")[0]?.payload).toEqual({
      stageId: "plan",
      stageExecutionId: "run-1/plan/1",
      attempt: 1,
      proposalId: "run-1/plan/1/a1/t1/c0",
      tool: "Edit",
      argsDigest: expect.stringMatching(/^[0-9a-f]{64}$/),
      argsSummary: "src/auth.ts",
      envelope: ["Read", "Grep", "Glob"],
    });
    expect(byType("ToolDenied")[0]?.payload).toMatchObject({
      tool: "Edit",
      source: "interactor",
      code: "ToolTerminal/GrantDenied",
    });
    expect(byType("ToolApproved")[0]?.payload).toMatchObject({ tool: "Grep", source: "envelope" });
    expect(byType("StageAssertOutcome")[0]?.payload).toEqual({ verdict: "ok" });
    expect(byType("StageExited")[0]?.payload).toMatchObject({
      verdict: "ok",
      capHit: false,
      attemptCount: 1,
    });

    const transcript = h.host.transcripts.read("run-1/plan/1");
    expect(transcript[0]).toMatchObject({
      role: "system",
      text: expect.stringContaining("Task: refactor auth module"),
    });
    expect(transcript[1]).toEqual({
      role: "user",
      text: 'Begin the stage "Plan" as instructed. When the work is done, call `submit_plan` with the result.',
    });
    expect(transcript[3]).toMatchObject({
      role: "tool",
      tool: "Edit",
      isError: true,
      result: {
        class: "ToolTerminal",
        code: "ToolTerminal/GrantDenied",
        context: { denied: true },
      },
    });
    expect(transcript[5]).toMatchObject({ role: "tool", tool: "Grep", isError: false });
    expect(JSON.stringify(transcript[5])).toContain("src/auth.ts");
    expect(existsSync(join(h.root, "src/auth.ts"))).toBe(true);
  });

  it("sends the model its envelope's tools and the completion channel, and the transcript so far", async () => {
    const seen: { tools: string[]; roles: string[] }[] = [];
    const h = harness(
      `
stages:
  plan:
    - tool: Grep
      args: { pattern: token }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`,
    );
    const inner = h.host.model.model;
    const spy = {
      ...inner,
      doGenerate: (options: Parameters<typeof inner.doGenerate>[0]) => {
        seen.push({
          tools: (options.tools ?? []).map((t) => t.name),
          roles: options.prompt.map((m) => m.role),
        });
        return inner.doGenerate(options);
      },
    };
    h.host.model = { ...h.host.model, model: spy };
    await runStage(h.host, stageInput(loadStage("plan")));
    expect(seen).toEqual([
      { tools: ["Read", "Grep", "Glob", "submit_plan"], roles: ["system", "user"] },
      {
        tools: ["Read", "Grep", "Glob", "submit_plan"],
        roles: ["system", "user", "assistant", "tool"],
      },
    ]);
  });

  it("offers the completion channel even with allowedTools: []", async () => {
    const h = harness(
      `
stages:
  review:
    - tool: submit_review
      args: { approved: true, summary: "Looks right", findings: [] }
`,
    );
    const upstream = [
      {
        stageId: "execute",
        stageExecutionId: "run-1/execute/1",
        verdict: "ok" as const,
        output: { summary: "done", files: [{ path: "src/auth.ts", change: "modified" }] },
        capHit: false,
        attemptCount: 1,
      },
    ];
    const result = await runStage(h.host, { ...stageInput(loadStage("review")), upstream });
    expect(result).toMatchObject({ verdict: "ok", parsed: { approved: true } });
    expect(h.host.transcripts.read("run-1/review/1")[0]).toMatchObject({
      text: expect.stringContaining('"path": "src/auth.ts"'),
    });
  });

  describe("Act", () => {
    it("returns a schema failure to the model as that call's result and continues", async () => {
      const h = harness(`
stages:
  plan:
    - tool: submit_plan
      args: { summary: "no steps" }
    - tool: submit_plan
      args: { summary: "now with steps", steps: ["a"] }
`);
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result).toMatchObject({ verdict: "ok", parsed: { summary: "now with steps" } });
      const rejected = h.audit.events.find((e) => e.type === "CompletionRejected");
      expect(rejected?.payload).toEqual({
        reason: "schema",
        errors: ["(root) must have required property 'steps'"],
      });
      expect(h.host.transcripts.read("run-1/plan/1")[3]).toMatchObject({
        role: "tool",
        tool: "submit_plan",
        isError: true,
        result: { code: "Validation/CompletionSchemaMismatch" },
      });
    });

    it("rejects a batch holding the completion call with other calls, unexecuted; the turn counts", async () => {
      const h = harness(`
stages:
  plan:
    - calls:
        - { tool: Write, args: { path: pwned.txt, content: x } }
        - { tool: submit_plan, args: { summary: "s", steps: [] } }
    - tool: submit_plan
      args: { summary: "alone", steps: [] }
`);
      const result = await runStage(
        h.host,
        stageInput(loadStage("plan", (t) => withLine(t, "turnCap", "turnCap: 2"))),
      );
      expect(result).toMatchObject({ verdict: "ok", parsed: { summary: "alone" } });
      expect(h.types()).not.toContain("ToolProposed");
      expect(h.audit.events.find((e) => e.type === "CompletionRejected")?.payload).toEqual({
        reason: "batch",
        tools: ["Write", "submit_plan"],
      });
      expect(existsSync(join(h.root, "pwned.txt"))).toBe(false);
    });

    it("steers a plain-text reply toward the completion tool; the turn counts", async () => {
      const h = harness(`
stages:
  plan:
    - text: "Let me think about this."
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`);
      await runStage(h.host, stageInput(loadStage("plan")));
      expect(h.types()).toContain("Steered");
      const turns = h.audit.events.filter((e) => e.type === "ModelTurn").map((e) => e.payload.turn);
      expect(turns).toEqual([1, 2]);
      expect(h.host.transcripts.read("run-1/plan/1")[3]).toMatchObject({
        role: "user",
        text: expect.stringContaining("`submit_plan`"),
      });
    });

    it("ends Act with capHit after turnCap turns; the default assert retries, then fails when attempts run out", async () => {
      const h = harness(`
stages:
  plan:
    - text: "one"
    - text: "two"
    - text: "three"
`);
      const stage = loadStage("plan", (t) => withLine(t, "turnCap", "turnCap: 1"));
      const result = await runStage(h.host, stageInput(stage));
      expect(result).toMatchObject({
        verdict: "fail",
        capHit: true,
        attemptCount: 2,
        error: { code: "Validation/StageRetriesExhausted" },
      });
      expect(h.types().filter((t) => t === "CapHit")).toHaveLength(2);
      expect(h.types()).toContain("StageRetry");
      const retryMessage = h.host.transcripts
        .read("run-1/plan/1")
        .find((e) => e.role === "user" && e.text.startsWith("Attempt 2"));
      expect(retryMessage).toBeDefined();
    });

    it("denies a call to a tool the host does not have, and continues", async () => {
      const h = harness(`
stages:
  plan:
    - tool: Teleport
      args: { to: mars }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`);
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.verdict).toBe("ok");
      expect(h.audit.events.find((e) => e.type === "ToolDenied")?.payload).toMatchObject({
        tool: "Teleport",
        source: "registry",
        code: "ToolTerminal/UnknownTool",
      });
    });
  });

  describe("tool approval", () => {
    const editTwice = (secondArgs: string) => `
stages:
  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: "'a'", new: "'b'" }
    - tool: Edit
      args: ${secondArgs}
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`;

    it("an approved grant covers one proposal: the same call again asks again", async () => {
      const asked: string[] = [];
      const h = harness(editTwice(`{ path: src/auth.ts, old: "'a'", new: "'b'" }`), {
        interactors: [
          callbackInteractor("test", (request) => {
            asked.push(request.proposalId);
            return "approve";
          }),
        ],
      });
      await runStage(h.host, stageInput(loadStage("plan")));
      expect(asked).toEqual(["run-1/plan/1/a1/t1/c0", "run-1/plan/1/a1/t2/c0"]);
      expect(h.types().filter((t) => t === "GrantIssued")).toHaveLength(2);
      expect(h.types().filter((t) => t === "GrantConsumed")).toHaveLength(2);
      const approved = h.audit.events
        .filter((e) => e.type === "ToolApproved")
        .map((e) => e.payload.source);
      expect(approved).toEqual(["grant", "grant"]);
      expect(h.audit.events.find((e) => e.type === "GrantIssued")?.payload).toMatchObject({
        source: "interactor",
      });
    });

    it("a call with other arguments asks again, with another digest", async () => {
      const requests: { argsDigest: string; argsSummary: string }[] = [];
      const h = harness(editTwice(`{ path: src/other.ts, old: "x", new: "y" }`), {
        interactors: [
          callbackInteractor("test", (request) => {
            requests.push(request);
            return "deny";
          }),
        ],
      });
      await runStage(h.host, stageInput(loadStage("plan")));
      expect(requests.map((r) => r.argsSummary)).toEqual(["src/auth.ts", "src/other.ts"]);
      expect(requests[0]?.argsDigest).not.toBe(requests[1]?.argsDigest);
    });

    it("headless (no interactor): the out-of-envelope call gets a typed denial and Act continues", async () => {
      const h = harness(editTwice(`{ path: src/auth.ts, old: "'a'", new: "'b'" }`));
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.verdict).toBe("ok");
      const denied = h.audit.events.filter((e) => e.type === "ToolDenied").map((e) => e.payload);
      expect(denied).toMatchObject([
        { source: "headless", code: "ToolTerminal/NoInteractor" },
        { source: "headless", code: "ToolTerminal/NoInteractor" },
      ]);
      expect(h.host.transcripts.read("run-1/plan/1")[3]).toMatchObject({
        result: { code: "ToolTerminal/NoInteractor" },
      });
    });

    it("the pipeline's grant policy answers before any interactor", async () => {
      const asked: string[] = [];
      const h = harness(editTwice(`{ path: .env, old: "x", new: "y" }`), {
        grantPolicy: rulesGrantPolicy({ approve: ["Edit(src/*)"], deny: ["Edit(.env)"] }),
        interactors: [
          callbackInteractor("test", (request) => {
            asked.push(request.tool);
            return "approve";
          }),
        ],
      });
      await runStage(h.host, stageInput(loadStage("plan")));
      expect(asked).toEqual([]);
      const decisions = h.audit.events
        .filter((e) => e.type === "ToolApproved" || e.type === "ToolDenied")
        .map((e) => [e.type, e.payload.source]);
      expect(decisions).toEqual([
        ["ToolApproved", "policy"],
        ["ToolDenied", "policy"],
      ]);
    });

    it("guard rules run after every approval and can still deny", async () => {
      const h = harness(
        `
stages:
  execute:
    - tool: Write
      args: { path: .env, content: "SECRET=1" }
    - tool: Write
      args: { path: notes.md, content: "ok" }
    - tool: submit_diff
      args: { summary: "notes", files: [{ path: notes.md, change: added }] }
`,
        { guards: ["Write(.env)"] },
      );
      const result = await runStage(h.host, stageInput(loadStage("execute")));
      expect(result.verdict).toBe("ok");
      expect(h.audit.events.find((e) => e.type === "ToolDenied")?.payload).toMatchObject({
        tool: "Write",
        source: "guard",
        code: "ToolTerminal/GuardDenied",
      });
      expect(existsSync(join(h.root, ".env"))).toBe(false);
      expect(existsSync(join(h.root, "notes.md"))).toBe(true);
    });

    it("the root sandbox refuses ../, absolute paths and escaping symlinks, as results the model reads", async () => {
      const h = harness(`
stages:
  plan:
    - calls:
        - { tool: Read, args: { path: ../outside.txt } }
        - { tool: Read, args: { path: /etc/passwd } }
        - { tool: Read, args: { path: escape/passwd } }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`);
      symlinkSync("/etc", join(h.root, "escape"));
      writeFileSync(join(h.root, "../outside.txt"), "secret");
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.verdict).toBe("ok");
      const failures = h.audit.events
        .filter((e) => e.type === "ToolFailed")
        .map((e) => e.payload.code);
      expect(failures).toEqual([
        "ToolTerminal/SandboxEscape",
        "ToolTerminal/SandboxEscape",
        "ToolTerminal/SandboxEscape",
      ]);
      expect(JSON.stringify(h.host.transcripts.read("run-1/plan/1"))).not.toContain("root:");
    });
  });

  describe("Assert and retries", () => {
    const twoAttempts = `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "first", steps: [] }
    - tool: submit_plan
      args: { summary: "second", steps: ["a"] }
`;
    const retryOnce = {
      plan: {
        assert: ({ parsed }: { parsed?: unknown }) =>
          (parsed as { steps: string[] }).steps.length === 0
            ? { verdict: "retry" as const, reason: "a plan needs steps" }
            : { verdict: "ok" as const },
      },
    };
    const withBackoff = (block: string) =>
      loadStage("plan", (t) => t.replace(/retryPolicy:\n(?: {2}.*\n)+/, `retryPolicy:\n${block}`));

    it.each([
      ["none", "  maxAttempts: 2\n  backoff: none\n", 0],
      ["fixed", "  maxAttempts: 2\n  backoff: fixed\n  delayMs: 30\n", 30],
      [
        "exponential",
        "  maxAttempts: 2\n  backoff: exponential\n  delayMs: 40\n  maxDelayMs: 100\n",
        40,
      ],
    ])(
      "a code assert's retry re-enters Act on the same transcript after %s backoff",
      async (_kind, block, delay) => {
        const h = harness(twoAttempts, { hooks: retryOnce });
        const started = Date.now();
        const result = await runStage(h.host, stageInput(withBackoff(block)));
        expect(Date.now() - started).toBeGreaterThanOrEqual(delay);
        expect(result).toMatchObject({
          verdict: "ok",
          attemptCount: 2,
          parsed: { summary: "second" },
        });
        expect(h.audit.events.find((e) => e.type === "StageRetry")?.payload).toMatchObject({
          nextAttempt: 2,
          maxAttempts: 2,
          reason: "a plan needs steps",
        });
        const delayMs = h.audit.events.find((e) => e.type === "StageRetry")?.payload
          .delayMs as number;
        expect(delayMs).toBeLessThanOrEqual(delay);
        expect(delayMs).toBeGreaterThanOrEqual(delay - 5);
        const transcript = h.host.transcripts.read("run-1/plan/1");
        expect(transcript.filter((e) => e.role === "system")).toHaveLength(1);
        expect(transcript.filter((e) => e.role === "user").map((e) => e.text)).toEqual([
          expect.stringContaining('Begin the stage "Plan"'),
          "Attempt 2 of 2. The previous attempt was not accepted: a plan needs steps",
        ]);
      },
    );

    it("exponential backoff doubles per attempt up to maxDelayMs", async () => {
      const h = harness(
        `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "1", steps: [] }
    - tool: submit_plan
      args: { summary: "2", steps: [] }
    - tool: submit_plan
      args: { summary: "3", steps: [] }
    - tool: submit_plan
      args: { summary: "4", steps: [] }
`,
        { hooks: { plan: { assert: () => ({ verdict: "retry", reason: "again" }) } } },
      );
      const result = await runStage(
        h.host,
        stageInput(
          withBackoff(
            "  maxAttempts: 4\n  backoff: exponential\n  delayMs: 10\n  maxDelayMs: 25\n",
          ),
        ),
      );
      expect(result).toMatchObject({
        verdict: "fail",
        attemptCount: 4,
        error: { code: "Validation/StageRetriesExhausted" },
      });
      const delays = h.audit.events
        .filter((e) => e.type === "StageRetry")
        .map((e) => e.payload.delayMs as number);
      expect(delays.map((d) => Math.round(d / 5) * 5)).toEqual([10, 20, 25]);
    });

    it("a code assert can fail or skip the stage", async () => {
      for (const verdict of ["fail", "skip"] as const) {
        const h = harness(PLAN_OK, {
          hooks: { plan: { assert: () => ({ verdict, reason: `assert says ${verdict}` }) } },
        });
        const result = await runStage(h.host, stageInput(loadStage("plan")));
        expect(result).toMatchObject({ verdict, reason: `assert says ${verdict}` });
      }
    });
  });

  describe("CheckGate and resolutionPolicy", () => {
    it("audits Setup and Init at the moments they ended, not when a slow gate answers", async () => {
      let asked = 0;
      let answered = 0;
      const h = harness(PLAN_OK, {
        hooks: {
          plan: {
            gate: async () => {
              asked = Date.now();
              while (Date.now() <= asked) await new Promise((r) => setTimeout(r, 2));
              answered = Date.now();
              return "proceed" as const;
            },
          },
        },
      });
      await runStage(h.host, stageInput(loadStage("plan")));
      const at = (type: string) =>
        Date.parse(h.audit.events.find((e) => e.type === type)?.at ?? "");
      expect(at("StageSetup")).toBeLessThanOrEqual(asked);
      expect(at("StageInit")).toBeLessThanOrEqual(asked);
      expect(at("CheckGateOutcome")).toBeGreaterThanOrEqual(answered);
    });

    const gated = (answer: "proceed" | "defer" | "block", policy: string) => {
      const h = harness(PLAN_OK, { hooks: { plan: { gate: () => answer } } });
      const stage = loadStage("plan", (t) =>
        withLine(t, "resolutionPolicy", `resolutionPolicy: ${policy}`),
      );
      return { h, stage };
    };

    it.each([
      ["proceed", "retry-later", "ok"],
      ["proceed", "fail", "ok"],
      ["defer", "skip", "skip"],
      ["defer", "fail", "fail"],
      ["block", "retry-later", "fail"],
      ["block", "skip", "skip"],
      ["block", "fail", "fail"],
    ] as const)("%s with resolutionPolicy %s ends %s", async (answer, policy, verdict) => {
      const { h, stage } = gated(answer, policy);
      const result = await runStage(h.host, stageInput(stage));
      expect(result.verdict).toBe(verdict);
      expect(h.audit.events.find((e) => e.type === "CheckGateOutcome")?.payload).toMatchObject({
        answer,
      });
      expect(h.types().includes("ModelTurn")).toBe(answer === "proceed");
      if (verdict === "fail") expect(result.error?.code).toBe("Validation/StageGateRefused");
    });

    it("defer with retry-later waits, suspended, and checks the gate again on RECHECK", async () => {
      const answers: ("defer" | "proceed")[] = ["defer", "proceed"];
      const h = harness(PLAN_OK, { hooks: { plan: { gate: () => answers.shift() ?? "proceed" } } });
      const actor = createStageActor(h.host, stageInput(loadStage("plan")));
      actor.start();
      await waitFor(actor, (s) => s.hasTag("suspended"));
      expect(actor.getSnapshot().value).toBe("deferred");
      actor.send({ type: "RECHECK" });
      const done = await waitFor(actor, (s) => s.status === "done");
      expect(done.output?.verdict).toBe("ok");
      expect(
        h.audit.events.filter((e) => e.type === "CheckGateOutcome").map((e) => e.payload.answer),
      ).toEqual(["defer", "proceed"]);
    });
  });

  describe("Setup", () => {
    it("fails with StageInitFailed when an upstream result does not match inputsSchema", async () => {
      const h = harness(PLAN_OK);
      const upstream = [
        {
          stageId: "plan",
          stageExecutionId: "x",
          verdict: "ok" as const,
          capHit: false,
          attemptCount: 1,
        },
      ];
      const result = await runStage(h.host, { ...stageInput(loadStage("execute")), upstream });
      expect(result).toMatchObject({
        verdict: "fail",
        error: { code: "Validation/StageInputsInvalid" },
      });
      expect(result.error?.message).toContain("ctx.upstream[0] (from plan)");
      expect(h.types()).toEqual(["StageInitFailed", "StageExited"]);
    });

    it("fails when allowedTools names a tool the host does not have", async () => {
      const h = harness(PLAN_OK, { tools: [] });
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.error).toMatchObject({
        code: "Validation/UnknownTool",
        context: { missing: ["Read", "Grep", "Glob"] },
      });
    });

    it("fails with StageCtxUnresolved when the body needs a ctx value that is missing", async () => {
      const h = harness(PLAN_OK);
      const result = await runStage(h.host, stageInput(loadStage("plan"), { ctx: {} }));
      expect(result.error).toMatchObject({ code: "Validation/StageCtxUnresolved" });
      expect(h.types()).toEqual(["StageSetup", "StageInitFailed", "StageExited"]);
    });

    it("refuses a model without tool calling before any turn", async () => {
      const h = harness(PLAN_OK);
      h.host.model = { ...h.host.model, capabilities: { toolCalling: false } };
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.error).toMatchObject({ code: "ProviderCapability/MissingToolCalling" });
      expect(h.types()).not.toContain("ModelTurn");
    });
  });

  describe("provider errors", () => {
    it("are retried with backoff a bounded number of times", async () => {
      const h = harness(
        `
stages:
  plan:
    - { error: "upstream 503" }
    - { error: "rate limited", status: 429 }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`,
        { limits: { providerRetryDelayMs: 5 } },
      );
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.verdict).toBe("ok");
      const turns = h.audit.events
        .filter((e) => e.type === "ModelTurn")
        .map((e) => e.payload.outcome);
      expect(turns).toEqual(["error", "error", "completion"]);
    });

    it("then fail the stage with the provider's error", async () => {
      const h = harness(
        `
stages:
  plan:
    - { error: "down" }
    - { error: "down" }
    - { error: "down" }
`,
        { limits: { providerRetries: 2, providerRetryDelayMs: 1 } },
      );
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result).toMatchObject({ verdict: "fail", error: { class: "ProviderTransient" } });
      expect(h.types().filter((t) => t === "ModelTurn")).toHaveLength(3);
    });

    it("a request the provider rejects (4xx) fails the stage at once", async () => {
      const h = harness(`
stages:
  plan:
    - { error: "bad request", status: 400 }
`);
      const result = await runStage(h.host, stageInput(loadStage("plan")));
      expect(result.error).toMatchObject({ code: "ExtensionHost/ProviderRejected" });
    });
  });

  describe("cancellation", () => {
    it("stopping a stage aborts its in-flight tool call", async () => {
      const h = harness(`
stages:
  execute:
    - tool: Bash
      args: { command: "sleep 5; echo done > finished.txt" }
`);
      const stage = loadStage("execute", (t) =>
        withLine(t, "allowedTools", 'allowedTools: ["Bash"]'),
      );
      const actor = createStageActor(h.host, stageInput(stage));
      actor.start();
      await waitFor(actor, (s) => s.matches({ act: { dispatch: "running" } }));
      const started = Date.now();
      actor.send({ type: "CANCEL", reason: "user pressed stop" });
      const snapshot = await waitFor(actor, (s) => s.status === "done");
      expect(Date.now() - started).toBeLessThan(1000);
      expect(snapshot.output).toMatchObject({
        verdict: "fail",
        error: { code: "Cancellation/StageCancelled" },
      });
      expect(h.types().at(-1)).toBe("StageCancelled");
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      expect(existsSync(join(h.root, "finished.txt"))).toBe(false);
    }, 15_000);

    it("stopping a stage aborts its in-flight model call", async () => {
      const h = harness(`
stages:
  plan:
    - { delayMs: 5000, tool: submit_plan, args: { summary: "late", steps: [] } }
`);
      const actor = createStageActor(h.host, stageInput(loadStage("plan")));
      actor.start();
      await waitFor(actor, (s) => s.matches({ act: "calling" }));
      const started = Date.now();
      actor.send({ type: "CANCEL" });
      await waitFor(actor, (s) => s.status === "done");
      expect(Date.now() - started).toBeLessThan(500);
      expect(h.types()).not.toContain("StageAssertOutcome");
    });
  });

  describe("a persisted snapshot", () => {
    it("whose state lacks the actor it invokes is refused as Session/SnapshotCorrupt", async () => {
      const h = harness(PLAN_OK);
      const input = stageInput(loadStage("plan"));
      const first = createStageActor(h.host, input);
      first.start();
      await waitFor(first, (s) => s.matches({ act: "calling" }));
      const stored = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
      first.stop();
      // In Assert, without the actor that asserts: nothing would ever move the stage on.
      const damaged = { ...stored, value: "assert", children: {} };
      expect(() => createStageActor(h.host, input, { snapshot: damaged })).toThrow(
        expect.objectContaining({ code: "Session/SnapshotCorrupt" }),
      );
    });

    it("naming a state the stage does not have is refused as Session/SnapshotCorrupt", async () => {
      const h = harness(PLAN_OK);
      const input = stageInput(loadStage("plan"));
      const first = createStageActor(h.host, input);
      first.start();
      await waitFor(first, (s) => s.matches({ act: "calling" }));
      const stored = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
      first.stop();
      expect(() =>
        createStageActor(h.host, input, { snapshot: { ...stored, value: "nowhere" } }),
      ).toThrow(expect.objectContaining({ code: "Session/SnapshotCorrupt" }));
    });

    it("taken while waiting for a grant restores into an actor that finishes the stage", async () => {
      const h = harness(EDIT_THEN_SUBMIT, { unansweredGrants: "suspend" });
      const input = stageInput(loadStage("plan"));
      const first = createStageActor(h.host, input);
      first.start();
      await waitFor(first, (s) => s.hasTag("suspended"));
      const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
      first.stop();

      const second = createStageActor(h.host, input, { snapshot: persisted });
      second.start();
      expect(second.getSnapshot().hasTag("suspended")).toBe(true);
      second.send({
        type: "GRANT_ANSWER",
        proposalId: "run-1/plan/1/a1/t1/c0",
        decision: "approve",
        by: "cli",
      });
      const done = await waitFor(second, (s) => s.status === "done");
      expect(done.output?.verdict).toBe("ok");
      expect(h.audit.events.find((e) => e.type === "GrantIssued")?.payload).toMatchObject({
        source: "interactor",
        by: "cli",
      });
      expect(h.types().filter((t) => t === "ToolSucceeded")).toHaveLength(1);
      expect(h.types().filter((t) => t === "GrantRequested")).toHaveLength(1);
    });

    it("taken while an interactor is being asked restores by asking again", async () => {
      let asked = 0;
      const h = harness(EDIT_THEN_SUBMIT, {
        interactors: [
          callbackInteractor("flaky", (_, signal) => {
            asked += 1;
            if (asked > 1) return "approve";
            return new Promise((_, reject) =>
              signal.addEventListener("abort", () => reject(signal.reason)),
            );
          }),
        ],
      });
      const input = stageInput(loadStage("plan"));
      const first = createStageActor(h.host, input);
      first.start();
      await waitFor(first, (s) => s.matches({ act: { dispatch: { awaitingAnswer: "asking" } } }));
      const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
      first.stop();

      const second = createStageActor(h.host, input, { snapshot: persisted });
      second.start();
      const done = await waitFor(second, (s) => s.status === "done");
      expect(asked).toBe(2);
      expect(done.output?.verdict).toBe("ok");
      expect(h.types().filter((t) => t === "ToolSucceeded")).toHaveLength(1);
    });

    it("taken during backoff restores and waits only the rest of the delay", async () => {
      const h = harness(
        `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "first", steps: [] }
    - tool: submit_plan
      args: { summary: "second", steps: ["a"] }
`,
        {
          hooks: {
            plan: {
              assert: ({ parsed }) =>
                (parsed as { steps: string[] }).steps.length
                  ? { verdict: "ok" }
                  : { verdict: "retry", reason: "no steps" },
            },
          },
        },
      );
      const stage = loadStage("plan", (t) =>
        t.replace(
          /retryPolicy:\n(?: {2}.*\n)+/,
          "retryPolicy:\n  maxAttempts: 2\n  backoff: fixed\n  delayMs: 400\n",
        ),
      );
      const first = createStageActor(h.host, stageInput(stage));
      first.start();
      await waitFor(first, (s) => s.matches("retryBackoff"));
      const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
      first.stop();
      const deadline = persisted.context.waitUntil as number;
      expect(deadline).toBeGreaterThan(Date.now());

      const second = createStageActor(h.host, stageInput(stage), { snapshot: persisted });
      second.start();
      const done = await waitFor(second, (s) => s.status === "done");
      expect(Date.now()).toBeGreaterThanOrEqual(deadline);
      expect(done.output).toMatchObject({
        verdict: "ok",
        attemptCount: 2,
        parsed: { summary: "second" },
      });
      expect(h.types().filter((t) => t === "StageExited")).toHaveLength(1);
    });

    it("holds references, not the transcript", async () => {
      const h = harness(`
stages:
  plan:
    - text: "Let me think out loud about tokens."
    - tool: Grep
      args: { pattern: token }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`);
      const actor = createStageActor(h.host, stageInput(loadStage("plan")));
      actor.start();
      await waitFor(actor, (s) => s.status === "done");
      const transcript = JSON.stringify(h.host.transcripts.read("run-1/plan/1"));
      expect(transcript).toContain("export const token");
      const persisted = JSON.stringify(actor.getPersistedSnapshot());
      expect(persisted).not.toContain("export const token");
      expect(persisted).not.toContain("think out loud");
    });
  });
});

describe("a stage approved by an interactor", () => {
  it("runs the out-of-envelope call after minting and consuming its one-shot grant", async () => {
    const h = harness(
      `
stages:
  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: "'a'", new: "'b'" }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`,
      { interactors: [approve] },
    );
    await runStage(h.host, stageInput(loadStage("plan")));
    expect(h.types().slice(4, 10)).toEqual([
      "ToolProposed",
      "GrantRequested",
      "GrantIssued",
      "GrantConsumed",
      "ToolApproved",
      "ToolSucceeded",
    ]);
  });
});
