import { statSync } from "node:fs";
import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { bytesWrittenByProcess } from "../measure.js";
import { meter, totalBytes } from "../metered-store.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, stageIdsOf, type Workload } from "../workload.js";

const fileSize = (file: string): number => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

/**
 * (c) One long durable run: what the store is asked to write, what the process writes to disk,
 * and the snapshot's size over the run, against the size of the conversation itself.
 */
export async function writeAmplification(workload: Workload, dir: string): Promise<Comparison[]> {
  const pipeline = await pipelineOf(workload);
  const file = join(dir, "amplification.db");
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  const counted = meter(opened.value);
  let closed = false;
  try {
    const writtenBefore = bytesWrittenByProcess();
    const result = await runToEnd(pipeline, hostFor(workload), counted.store);
    const conversation = stageIdsOf(workload)
      .map((id) => result.results[id]?.stageExecutionId as string)
      .flatMap((execution) => opened.value.read(execution))
      .reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)), 0);
    const onDisk = fileSize(file) + fileSize(`${file}-wal`);
    // What the run's end leaves to the store's next checkpoint is written when the store is
    // closed: counted here.
    opened.value.close();
    closed = true;
    const writtenAfter = bytesWrittenByProcess();
    const handed = totalBytes(counted);
    const sizes = counted.snapshotSizes;
    const label = `${workload.stages * workload.turns} turns, ${workload.outputBytes} B tool outputs`;
    const shape = `${workload.stages}×${workload.turns}, ${workload.outputBytes} B outputs`;
    const comparisons = [
      compare(
        `write amplification (${label}): bytes handed to the store`,
        "bytes",
        { label: "conversation", value: conversation },
        { label: "store writes", value: handed },
        { ...counted.bytes, commits: counted.commits, dbPlusWalFileBytes: onDisk },
      ),
      compare(
        `snapshot size, first commit → last commit (${shape})`,
        "bytes",
        { label: "first", value: sizes[0] ?? 0 },
        { label: "last", value: sizes.at(-1) ?? 0 },
        { largest: Math.max(...sizes), snapshots: sizes.length },
      ),
    ];
    if (writtenBefore !== undefined && writtenAfter !== undefined) {
      comparisons.splice(
        1,
        0,
        compare(
          `write amplification: bytes the process wrote to disk (/proc wchar), ${shape}`,
          "bytes",
          { label: "conversation", value: conversation },
          { label: "written", value: writtenAfter - writtenBefore },
          undefined,
          3,
        ),
      );
    }
    return comparisons;
  } finally {
    if (!closed) opened.value.close();
  }
}
