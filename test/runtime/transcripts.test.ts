import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TranscriptEntry } from "../../src/compiler/stage-types.js";
import { transcriptCutoff, transcriptKey } from "../../src/compiler/transcript-keys.js";
import { MemoryTranscripts, OrderedTranscript, toPrompt } from "../../src/runtime/transcripts.js";

describe("transcripts", () => {
  it("are read in position order, whatever order they were written in, and a rewrite replaces", () => {
    const store = new MemoryTranscripts();
    const key = (attempt: number, turn: number, slot = 0, index = 0) =>
      transcriptKey({ attempt, turn, slot, index });
    store.put("s", key(1, 2, 1), { role: "user", text: "result of turn 2" });
    store.put("s", key(0, 0), { role: "system", text: "prompt" });
    store.put("s", key(1, 10), { role: "user", text: "turn 10" });
    store.put("s", key(1, 2), { role: "user", text: "turn 2" });
    store.put("s", key(1, 2), { role: "user", text: "turn 2" });
    expect(
      store.read("s").map((e) => (e.role === "system" || e.role === "user" ? e.text : "")),
    ).toEqual(["prompt", "turn 2", "result of turn 2", "turn 10"]);
    expect(store.read("s", transcriptCutoff(1, 10))).toHaveLength(3);
    expect(store.read("other")).toEqual([]);
  });

  it("kept in order read the same prefix as sorting every key would, whatever the order of puts", () => {
    const position = fc.record({
      attempt: fc.nat(3),
      turn: fc.nat(5),
      slot: fc.nat(2),
      index: fc.nat(2),
    });
    fc.assert(
      fc.property(fc.array(position), position, (puts, cutoff) => {
        const transcript = new OrderedTranscript();
        const latest = new Map<string, string>();
        puts.forEach((at, n) => {
          const key = transcriptKey(at);
          transcript.put(key, { role: "user", text: `${n}` });
          latest.set(key, `${n}`);
        });
        const before = transcriptKey(cutoff);
        const expected = [...latest.keys()]
          .filter((key) => key < before)
          .sort()
          .map((key) => ({ role: "user", text: latest.get(key) }));
        expect(transcript.before(before)).toEqual(expected);
        expect(transcript.before()).toHaveLength(latest.size);
      }),
    );
  });

  it("become an AI SDK prompt with tool results grouped per reply", () => {
    const prompt = toPrompt([
      { role: "system", text: "You plan." },
      {
        role: "assistant",
        text: "Looking.",
        calls: [
          { toolCallId: "1", tool: "Grep", args: { pattern: "a" } },
          { toolCallId: "2", tool: "Edit", args: { path: "x" } },
        ],
      },
      { role: "tool", toolCallId: "1", tool: "Grep", result: "a.ts:1: a", isError: false },
      {
        role: "tool",
        toolCallId: "2",
        tool: "Edit",
        result: { code: "ToolTerminal/GrantDenied" },
        isError: true,
      },
      { role: "user", text: "Call submit_plan." },
    ]);
    expect(prompt).toEqual([
      { role: "system", content: "You plan." },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Looking." },
          { type: "tool-call", toolCallId: "1", toolName: "Grep", input: { pattern: "a" } },
          { type: "tool-call", toolCallId: "2", toolName: "Edit", input: { path: "x" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "1",
            toolName: "Grep",
            output: { type: "text", value: "a.ts:1: a" },
          },
          {
            type: "tool-result",
            toolCallId: "2",
            toolName: "Edit",
            output: { type: "error-json", value: { code: "ToolTerminal/GrantDenied" } },
          },
        ],
      },
      { role: "user", content: [{ type: "text", text: "Call submit_plan." }] },
    ]);
  });

  it("leave out blank reply text, and a reply with nothing else: providers refuse them", () => {
    const steering = "Plain text does not end this stage.";
    const grep = { toolCallId: "1", tool: "Grep", args: { pattern: "a" } };
    const prompt = toPrompt([
      { role: "system", text: "You plan." },
      { role: "user", text: "Begin." },
      { role: "assistant", text: "", calls: [] },
      { role: "user", text: steering },
      { role: "assistant", text: " \n", calls: [] },
      { role: "user", text: steering },
      { role: "assistant", text: "\n\n", calls: [grep] },
    ]);
    expect(prompt.map((message) => message.role)).toEqual([
      "system",
      "user",
      "user",
      "user",
      "assistant",
    ]);
    expect(prompt.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "1", toolName: "Grep", input: { pattern: "a" } }],
    });
  });

  it("make each entry's message once: a later turn's prompt reuses the earlier turns' messages, all but a trailing run of tool results", () => {
    const earlier: TranscriptEntry[] = [
      { role: "system", text: "You plan." },
      { role: "assistant", text: "", calls: [{ toolCallId: "1", tool: "Grep", args: {} }] },
      { role: "tool", toolCallId: "1", tool: "Grep", result: "a.ts:1: a", isError: false },
    ];
    const first = toPrompt(earlier);
    const later = toPrompt([
      ...earlier,
      { role: "assistant", text: "", calls: [{ toolCallId: "2", tool: "Grep", args: {} }] },
      { role: "tool", toolCallId: "2", tool: "Grep", result: "b.ts:2: b", isError: false },
    ]);
    expect(later).toHaveLength(5);
    expect(later[0]).toBe(first[0]);
    expect(later[1]).toBe(first[1]);
    expect(later[2]).toEqual(first[2]);
  });

  it("reuse the messages of the last prompt of their scope only: another scope's are made afresh", () => {
    const earlier: TranscriptEntry[] = [
      { role: "system", text: "You plan." },
      { role: "assistant", text: "", calls: [{ toolCallId: "1", tool: "Grep", args: {} }] },
    ];
    const attempt = {};
    const first = toPrompt(earlier, attempt);
    expect(toPrompt(earlier, attempt)[1]).toBe(first[1]);
    const elsewhere = toPrompt(earlier, {});
    expect(elsewhere[1]).not.toBe(first[1]);
    expect(elsewhere).toEqual(first);
  });

  it("grow a run of tool results into a new message, leaving the earlier prompt's as it was", () => {
    const call: TranscriptEntry = {
      role: "assistant",
      text: "",
      calls: [
        { toolCallId: "1", tool: "Grep", args: {} },
        { toolCallId: "2", tool: "Grep", args: {} },
      ],
    };
    const result = (id: string): TranscriptEntry => ({
      role: "tool",
      toolCallId: id,
      tool: "Grep",
      result: id,
      isError: false,
    });
    const one = result("1");
    const before = toPrompt([call, one]);
    const after = toPrompt([call, one, result("2")]);
    expect(before[1]?.content).toHaveLength(1);
    expect(after[1]?.content).toHaveLength(2);
    expect(after[0]).toBe(before[0]);
  });

  it("reused or not, a prompt is the one its entries make afresh, whatever prefixes came before", () => {
    const entry = fc.oneof(
      fc.constant<TranscriptEntry>({ role: "user", text: "go on" }),
      fc.constant<TranscriptEntry>({
        role: "assistant",
        text: "",
        calls: [{ toolCallId: "1", tool: "Grep", args: {} }],
      }),
      fc.nat(3).map(
        (n): TranscriptEntry => ({
          role: "tool",
          toolCallId: `${n}`,
          tool: "Grep",
          result: `${n}`,
          isError: false,
        }),
      ),
    );
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 12 }), fc.array(fc.nat(12)), (rest, cuts) => {
        const entries: TranscriptEntry[] = [{ role: "system", text: "You plan." }, ...rest];
        for (const cut of cuts) {
          const prefix = entries.slice(0, cut + 1);
          expect(toPrompt(prefix)).toEqual(toPrompt(structuredClone(prefix)));
        }
      }),
    );
  });
});
