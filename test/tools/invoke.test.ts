import { describe, expect, it, vi } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { type AnyTool, invokeTool, type ToolContext } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf } from "./project.js";

function fakeTool(execute: AnyTool["execute"]): AnyTool {
  return {
    name: "Fake",
    description: "a tool for tests",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
      additionalProperties: false,
    },
    mutates: false,
    summarize: (args) => args.text,
    execute,
  };
}

const echo = fakeTool(async (args) => ({ ok: true, output: { echoed: args.text } }));

/** Fails when its signal aborts and never settles otherwise, like a tool that hangs. */
const untilAborted = (_args: unknown, context: ToolContext) =>
  new Promise<never>((_resolve, reject) =>
    context.signal.addEventListener("abort", () => reject(new Error("aborted"))),
  );

describe("invokeTool", () => {
  it("runs a tool with valid arguments and returns its output", async () => {
    const outcome = await invokeTool(echo, { text: "hi" }, makeProject().context());
    expect(outcome).toEqual({ ok: true, output: { echoed: "hi" } });
  });

  it("rejects arguments that fail the schema, with Ajv's errors, without running the tool", async () => {
    let ran = false;
    const tool = fakeTool(async () => {
      ran = true;
      return { ok: true, output: null };
    });
    const outcome = await invokeTool(tool, { text: 1, extra: true }, makeProject().context());
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe("ToolTerminal/InvalidToolInput");
    expect(outcome.error.context.errors).toEqual([
      '(root) must NOT have additional properties ("extra")',
      "/text must be string",
    ]);
    expect(ran).toBe(false);
  });

  it("rejects a call to a tool whose schema does not compile", async () => {
    const broken = { ...echo, inputSchema: { type: "object", required: ["undeclared"] } };
    expect(codeOf(await invokeTool(broken, {}, makeProject().context()))).toBe(
      "ToolTerminal/InvalidToolSchema",
    );
  });

  it("cuts long strings anywhere in the output, with a marker saying how much went", async () => {
    const long = "x".repeat(1000);
    const tool = fakeTool(async () => ({ ok: true, output: { nested: [long], short: "ok" } }));
    const context = makeProject().context({ limits: { maxOutputBytes: 100 } });
    const output = outputOf(await invokeTool(tool, { text: "" }, context));
    const cut = (output.nested as string[])[0] ?? "";
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(100);
    expect(cut).toMatch(/^x+\n… \[truncated: \d+ more bytes\]$/);
    const kept = cut.indexOf("\n");
    expect(cut).toContain(`[truncated: ${1000 - kept} more bytes]`);
    expect(output.short).toBe("ok");
  });

  it("hands back an output that fits as it is: not copied, no string encoded to measure it", async () => {
    const returned = { nested: ["short", { deeper: "text" }], count: 3 };
    const tool = fakeTool(async () => ({ ok: true, output: returned }));
    const encoded = vi.spyOn(Buffer, "from");
    try {
      const outcome = await invokeTool(tool, { text: "" }, makeProject().context());
      expect(outputOf(outcome)).toBe(returned);
      expect(encoded).not.toHaveBeenCalled();
    } finally {
      encoded.mockRestore();
    }
  });

  it("copies only what it cuts: the rest of the output is left untouched", async () => {
    const returned = { long: "x".repeat(1000), kept: { text: "ok" } };
    const tool = fakeTool(async () => ({ ok: true, output: returned }));
    const context = makeProject().context({ limits: { maxOutputBytes: 100 } });
    const output = outputOf(await invokeTool(tool, { text: "" }, context));
    expect(output).not.toBe(returned);
    expect(output.kept).toBe(returned.kept);
    expect(returned.long).toHaveLength(1000);
  });

  it("never splits a multi-byte character when cutting", async () => {
    const tool = fakeTool(async () => ({ ok: true, output: "é".repeat(200) }));
    const context = makeProject().context({ limits: { maxOutputBytes: 101 } });
    const output = (await invokeTool(tool, { text: "" }, context)) as { output: string };
    expect(output.output).not.toContain("\uFFFD");
    expect(output.output).toMatch(/^é+\n… \[truncated: \d+ more bytes\]$/);
  });

  it("turns a thrown exception into ToolTerminal/ToolCrashed", async () => {
    const tool = fakeTool(async () => {
      throw new TypeError("boom");
    });
    const outcome = await invokeTool(tool, { text: "" }, makeProject().context());
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe("ToolTerminal/ToolCrashed");
    expect(outcome.error.message).toContain("boom");
    expect(outcome.error.context).toEqual({ tool: "Fake" });
  });

  it("keeps the code of a StagechartError a tool throws", async () => {
    const tool = fakeTool(async () => {
      throw new StagechartError("ToolTerminal/FileNotFound", "gone");
    });
    expect(codeOf(await invokeTool(tool, { text: "" }, makeProject().context()))).toBe(
      "ToolTerminal/FileNotFound",
    );
  });

  it("treats a tool that returns no outcome as crashed", async () => {
    const tool = fakeTool(async () => undefined as never);
    expect(codeOf(await invokeTool(tool, { text: "" }, makeProject().context()))).toBe(
      "ToolTerminal/ToolCrashed",
    );
  });

  it("stops a call after limits.timeoutMs with ToolTransient/ToolTimeout", async () => {
    let aborted = false;
    const tool = fakeTool((args, context) => {
      context.signal.addEventListener("abort", () => {
        aborted = true;
      });
      return untilAborted(args, context);
    });
    const context = makeProject().context({ limits: { timeoutMs: 50 } });
    const started = Date.now();
    expect(codeOf(await invokeTool(tool, { text: "" }, context))).toBe("ToolTransient/ToolTimeout");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(aborted).toBe(true);
  });

  it("answers a timeout even when the tool ignores its signal", async () => {
    const tool = fakeTool(() => new Promise(() => {}));
    const context = makeProject().context({ limits: { timeoutMs: 50 } });
    expect(codeOf(await invokeTool(tool, { text: "" }, context))).toBe("ToolTransient/ToolTimeout");
  });

  it("returns Cancellation/StageCancelled when the stage's signal aborts", async () => {
    const controller = new AbortController();
    const context = makeProject().context({ signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    const outcome = await invokeTool(fakeTool(untilAborted), { text: "" }, context);
    expect(codeOf(outcome)).toBe("Cancellation/StageCancelled");
  });

  it("does not start a tool when the signal is already aborted", async () => {
    let ran = false;
    const tool = fakeTool(async () => {
      ran = true;
      return { ok: true, output: null };
    });
    const context = makeProject().context({ signal: AbortSignal.abort() });
    expect(codeOf(await invokeTool(tool, { text: "" }, context))).toBe(
      "Cancellation/StageCancelled",
    );
    expect(ran).toBe(false);
  });

  it("lets go of the stage's signal once the call is over: a later abort no longer reaches the tool's", async () => {
    let seen: AbortSignal | undefined;
    const tool = fakeTool(async (_args, context) => {
      seen = context.signal;
      return { ok: true, output: null };
    });
    const controller = new AbortController();
    await invokeTool(tool, { text: "" }, makeProject().context({ signal: controller.signal }));
    controller.abort();
    expect(seen?.aborted).toBe(false);
  });

  it("builds no timeout signal for a tool that never reads its signal", async () => {
    const context = makeProject().context();
    const reads = vi.spyOn(AbortController.prototype, "signal", "get");
    try {
      expect(await invokeTool(echo, { text: "hi" }, context)).toMatchObject({ ok: true });
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
  });
});
