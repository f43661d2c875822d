import { join } from "node:path";
import { createActor, toPromise } from "xstate";
import { createScriptedModel } from "../../src/index.js";
import { openDatabase } from "../../src/store/sqlite-file.js";
import { bareMachine, runBare } from "../bare-xstate.js";
import { bytesWrittenByProcess, timeSideBySide } from "../measure.js";
import { type Comparison, compare } from "../report.js";
import { lookupTool, scriptOf, stageIdsOf, type Workload } from "../workload.js";

/** Less than any step of a stagechart run writes (its audit events alone are larger). */
const ROW_BYTES = 500;

/**
 * What committing every step costs at the least: the bare XState machine of "engine overhead"
 * with one SQLite transaction per step — one insert of a 500-byte row, on a file opened as the
 * store opens its own (1 KiB pages, WAL, `synchronous = NORMAL`) — against the same machine in
 * memory. Its `addedMsPerStep` is the floor under what a committed step adds to a stagechart
 * run (the ratio is not: it depends on how long the in-memory step takes).
 */
export async function durabilityFloor(workload: Workload, dir: string): Promise<Comparison> {
  const db = openDatabase(join(dir, "durability-floor.db"));
  db.exec(
    "CREATE TABLE steps (run_id TEXT NOT NULL, step INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, step))",
  );
  const insert = db.prepare("INSERT INTO steps (run_id, step, body) VALUES (?, ?, ?)");
  const commit = db.transaction((runId: string, step: number) =>
    insert.run(runId, step, "x".repeat(ROW_BYTES)),
  );
  const lookup = lookupTool(workload.outputBytes);
  let runs = 0;
  let steps = 0;
  const committedRun = async () => {
    const runId = `floor-${++runs}`;
    const actor = createActor(bareMachine(createScriptedModel(scriptOf(workload)), lookup), {
      input: { stageIds: stageIdsOf(workload) },
    });
    let step = 0;
    actor.subscribe(() => commit(runId, ++step));
    const done = toPromise(actor);
    actor.start();
    await done;
    steps = step;
  };
  try {
    const [memory, durable] = await timeSideBySide(
      {
        name: "bare XState in memory",
        fn: () => runBare(workload, createScriptedModel(scriptOf(workload)), lookup),
      },
      { name: "bare XState, a transaction per step", fn: committedRun },
    );
    return compare(
      `durability floor: bare XState with a SQLite transaction per step, ${workload.stages} stages × ${workload.turns} turns`,
      "ms",
      { label: "bare XState in memory", value: memory.medianMs },
      { label: "+ a commit per step", value: durable.medianMs },
      {
        stepsPerRun: steps,
        rowBytes: ROW_BYTES,
        addedMsPerStep: (durable.medianMs - memory.medianMs) / steps,
      },
    );
  } finally {
    db.close();
  }
}

/**
 * What writing the conversation durably costs in bytes at the least: the bare XState machine
 * committing, at every step, the messages it added since the step before (their JSON, one row a
 * step, on a file opened as the store opens its own), then closing the file (its checkpoint).
 * Its ratio, bytes the process wrote (/proc wchar) ÷ the conversation's bytes, is what WAL pages
 * and the checkpoint's second copy cost any store that commits each step; stagechart's "bytes the
 * process wrote to disk" row is held against it.
 */
export async function diskFloor(workload: Workload, dir: string): Promise<Comparison | undefined> {
  const file = join(dir, `disk-floor-${workload.outputBytes}.db`);
  const db = openDatabase(file);
  db.exec(
    "CREATE TABLE steps (run_id TEXT NOT NULL, step INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, step))",
  );
  const insert = db.prepare("INSERT INTO steps (run_id, step, body) VALUES (?, ?, ?)");
  const commit = db.transaction((step: number, body: string) => insert.run("floor", step, body));
  const actor = createActor(
    bareMachine(createScriptedModel(scriptOf(workload)), lookupTool(workload.outputBytes)),
    { input: { stageIds: stageIdsOf(workload) } },
  );
  let step = 0;
  let conversation = 0;
  let seen: unknown[] = [];
  const before = bytesWrittenByProcess();
  actor.subscribe((snapshot) => {
    const { messages } = snapshot.context as { messages: unknown[] };
    // A new stage starts a new list: all of it is new.
    const added = messages[0] === seen[0] ? messages.slice(seen.length) : messages;
    seen = messages;
    const body = JSON.stringify(added);
    conversation += Buffer.byteLength(body);
    commit(++step, body);
  });
  const done = toPromise(actor);
  actor.start();
  await done;
  db.close();
  const after = bytesWrittenByProcess();
  if (before === undefined || after === undefined) return undefined;
  return compare(
    `disk floor: the conversation committed a step at a time, bare XState, ${workload.stages}×${workload.turns}, ${workload.outputBytes} B outputs`,
    "bytes",
    { label: "conversation", value: conversation },
    { label: "written", value: after - before },
    { steps: step },
  );
}
