import type { RunStore } from "../../../src/runtime/store-port.js";

/**
 * `count` ended runs of `steps` steps each, every step storing a snapshot that grows by a few
 * hundred bytes of text no compression shrinks much, with a journal and a transcript entry.
 */
export async function storeEndedRuns(store: RunStore, count: number, steps = 5): Promise<string[]> {
  const runIds: string[] = [];
  for (let n = 0; n < count; n++) {
    const runId = `old-${String(n).padStart(4, "0")}`;
    const created = await store.createRun({
      runId,
      pipelineId: "plan-build",
      definitionHash: "hash-1",
      options: {},
    });
    if (!created.ok) throw created.error;
    const notes: string[] = [];
    for (let i = 1; i <= steps; i++) {
      notes.push(noise(`${runId}-${i}`, 400));
      await store.commitStep(runId, {
        events: [{ type: "RunStarted", runId, payload: { note: noise(runId, 200) } }],
        snapshot: { value: `state-${i}`, context: { runId, notes: [...notes] } },
        journal: [
          { key: `model:${runId}/${runId}/plan/1/${i}`, value: { reply: noise(runId, 300) } },
        ],
        transcripts: [
          {
            stageExecutionId: `${runId}/plan/1`,
            key: `k${i}`,
            entry: { role: "user", text: noise(`${runId}/${i}`, 300) },
          },
        ],
      });
    }
    const ended = await store.updateRun(runId, { status: "done" });
    if (!ended.ok) throw ended.error;
    runIds.push(runId);
  }
  return runIds;
}

/** `length` characters that differ from seed to seed and hardly compress. */
function noise(seed: string, length: number): string {
  let state = [...seed].reduce((hash, char) => (hash * 31 + char.charCodeAt(0)) >>> 0, 7);
  let text = "";
  while (text.length < length) {
    state = (state * 1_103_515_245 + 12_345) >>> 0;
    text += state.toString(36);
  }
  return text.slice(0, length);
}
