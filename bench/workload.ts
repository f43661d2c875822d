import { realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import {
  type AnyTool,
  createHost,
  createScriptedModel,
  type Host,
  loadPipeline,
  MemoryAuditLog,
  type PipelineDefinition,
  parseStageDefinition,
  type Script,
  type ScriptEntry,
  type StageDefinition,
  type UnansweredGrants,
} from "../src/index.js";

/** The work shape every benchmark runs: `stages` LLM stages in a chain, `turns` model turns each. */
export interface Workload {
  stages: number;
  /** Model turns per stage: `turns - 1` Lookup calls, then the completion call. */
  turns: number;
  /** Size of each Lookup result, in characters. */
  outputBytes: number;
  /** Stages whose first turn asks for Probe, a tool outside their envelope (a grant request). */
  probingStages?: readonly number[];
  /** Latency of the model turns that follow a launch or a grant, so a run waits there. */
  pauseMs?: number;
}

export const COMPLETION_TOOL = "finish";
export const LOOKUP_TOOL = "Lookup";
export const PROBE_TOOL = "Probe";

export const stageIdsOf = (workload: Workload): string[] =>
  Array.from({ length: workload.stages }, (_, i) => `step-${i + 1}`);

export function stageDefinition(id: string, turns: number): StageDefinition {
  const text = `---
id: ${id}
name: Step ${id}
allowedTools: ["${LOOKUP_TOOL}"]
completionTool: ${COMPLETION_TOOL}
completionSchema:
  type: object
  required: [summary]
  properties: { summary: { type: string } }
retryPolicy: { maxAttempts: 1, backoff: none }
turnCap: ${turns + 1}
resolutionPolicy: fail
---

Work on the task: {{ctx.task}}. Look things up with ${LOOKUP_TOOL}, then call ${COMPLETION_TOOL}.
`;
  const parsed = parseStageDefinition(text, `${id}.md`);
  if (!parsed.ok) throw new Error(`stage ${id}: ${JSON.stringify(parsed.diagnostics)}`);
  return parsed.value;
}

export async function pipelineOf(workload: Workload): Promise<PipelineDefinition> {
  const ids = stageIdsOf(workload);
  const loaded = await loadPipeline(
    {
      id: "bench-chain",
      context: { type: "object", properties: { task: { type: "string" } } },
      entry: ids[0] as string,
      stages: Object.fromEntries(
        ids.map((id) => [id, { stage: stageDefinition(id, workload.turns) }]),
      ),
      next: Object.fromEntries(ids.slice(0, -1).map((id, i) => [id, ids[i + 1] as string])),
    },
    { toolNames: [LOOKUP_TOOL, PROBE_TOOL] },
  );
  if (!loaded.ok) throw new Error(`pipeline: ${JSON.stringify(loaded.diagnostics)}`);
  return loaded.value;
}

const entry = (tool: string, args: Record<string, unknown>, delayMs = 0): ScriptEntry => ({
  reply: { kind: "tool-calls", calls: [{ tool, args }] },
  delayMs,
  // No fixed token counts: the scripted model estimates them from each prompt, as a user's run does.
  usage: {},
});

/** What the scripted model answers, stage by stage; both engines consume the same script. */
export function scriptOf(workload: Workload): Script {
  const pause = workload.pauseMs ?? 0;
  const stages = stageIdsOf(workload).map((id, index): [string, ScriptEntry[]] => {
    const lookups = Array.from({ length: workload.turns - 1 }, (_, turn) =>
      entry(LOOKUP_TOOL, { key: `${id}-${turn}` }, turn === 0 && index === 0 ? pause : 0),
    );
    const probing = workload.probingStages?.includes(index) ?? false;
    if (probing) {
      lookups.unshift(entry(PROBE_TOOL, { key: `${id}-probe` }));
      if (lookups[1]) lookups[1] = { ...lookups[1], delayMs: pause };
    }
    return [id, [...lookups, entry(COMPLETION_TOOL, { summary: `${id} done` })]];
  });
  return { file: "bench.script.yaml", stages: new Map(stages) };
}

/** Deterministic filler text of exactly `bytes` characters, a fresh flat string on each call. */
export function filler(seed: string, bytes: number): string {
  return Buffer.alloc(bytes, `${seed}: the quick brown fox jumps over the lazy dog. `).toString();
}

/** A tool answering with `outputBytes` characters; the stand-in for a file read or a search. */
export function lookupTool(outputBytes: number, name = LOOKUP_TOOL): AnyTool {
  return {
    name,
    description: "Looks a key up and returns what is known about it.",
    inputSchema: { type: "object", required: ["key"], properties: { key: { type: "string" } } },
    mutates: false,
    summarize: (args: { key: string }) => args.key,
    execute: async (args: { key: string }) => ({ ok: true, output: filler(args.key, outputBytes) }),
  };
}

const ROOT = realpathSync(tmpdir());

/**
 * A fresh host on a fresh scripted model (its cursors start at the script's first entries);
 * `onModelCall` is told of each call as it is made.
 */
export function hostFor(
  workload: Workload,
  options: { unansweredGrants?: UnansweredGrants; onModelCall?: () => void } = {},
): Host {
  const { onModelCall, ...hostOptions } = options;
  const scripted = createScriptedModel(scriptOf(workload));
  const model = onModelCall
    ? {
        ...scripted,
        model: {
          ...scripted.model,
          doGenerate: (call: Parameters<typeof scripted.model.doGenerate>[0]) => {
            onModelCall();
            return scripted.model.doGenerate(call);
          },
        },
      }
    : scripted;
  return createHost({
    model,
    audit: new MemoryAuditLog(),
    root: ROOT,
    tools: [lookupTool(workload.outputBytes), lookupTool(workload.outputBytes, PROBE_TOOL)],
    ...hostOptions,
  });
}
