import { hash } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import type { StagechartError } from "../errors.js";
import { stepsLost } from "./store-errors.js";

/** How far a run's steps reached: its last step's number and its last audit event's seq. */
export interface StepTail {
  step: number;
  lastSeq: number;
}

/** A run's mark: how far it had committed, and the file that says so. */
export interface LiveMark extends StepTail {
  runId: string;
  file: string;
  /** The run's row as it was created (JSON), when the mark was made then. */
  row?: string;
}

/** A mark's first line has a fixed width, so that each write covers the one before it whole. */
const TAIL_WIDTH = 40;

const tailLine = ({ step, lastSeq }: StepTail): string =>
  `${step} ${lastSeq}`.padEnd(TAIL_WIDTH - 1).concat("\n");

/**
 * How far each live run of a SQLite store has committed, kept outside the database: one small
 * file per run in `<store>.live/` (its tail on the first line, rewritten in place after each
 * commit, its run id on the second, then the row it was created with, in base64 after a NUL byte),
 * and removed once
 * the run left `running` and a checkpoint put its steps in the main file. Until then its steps may live only in the WAL, and a WAL
 * deleted or damaged after a crash loses them without a trace in the database: the mark is what
 * tells that they were there. Each write goes to the page cache, unsynced, as the WAL's own
 * commits do: a killed process loses none. Only a run's lease holder commits its steps, so each
 * mark has one writer at a time.
 */
export class LiveMarks {
  readonly dir: string;
  private readonly open = new Map<string, number>();

  constructor(storePath: string) {
    this.dir = `${storePath}.live`;
  }

  /** Records that `runId` was created as `row` (its JSON), with the steps it has (none, or a fork's first). */
  created(runId: string, row: string, tail: StepTail = { step: 0, lastSeq: 0 }): void {
    this.forget(runId);
    const fd = this.create(runId, "w");
    this.open.set(runId, fd);
    // The row in base64 after a NUL: a binary file, which a tool searching the project's text
    // (a store may sit inside it) passes over, and no text of the row in it to find.
    const encoded = Buffer.from(row).toString("base64");
    writeSync(fd, `${tailLine(tail)}${runId}\n\0${BASE64_ROW}${encoded}`, 0);
  }

  /** Records that `runId` has committed up to `tail`. */
  committed(runId: string, tail: StepTail): void {
    let fd = this.open.get(runId);
    if (fd === undefined) {
      // Its mark may be there already (made when the run was created): only its tail is written.
      fd = this.openExisting(runId) ?? this.create(runId, "w");
      this.open.set(runId, fd);
      writeSync(fd, `${tailLine(tail)}${runId}\n`, 0);
      return;
    }
    writeSync(fd, tailLine(tail), 0);
  }

  private openExisting(runId: string): number | undefined {
    try {
      return openSync(this.fileOf(runId), "r+");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  /** The run's mark file, opened as `flags` says: its folder made when missing (or removed meanwhile). */
  private create(runId: string, flags: string): number {
    for (let attempt = 1; ; attempt++) {
      try {
        return openSync(this.fileOf(runId), flags);
      } catch (error) {
        const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
        if (!missing || attempt >= 3) throw error;
        // Another process's `settled` may remove the empty folder between these two calls.
        mkdirSync(this.dir, { recursive: true });
      }
    }
  }

  /** The run is not written here for now: its file is closed, its mark stays. */
  forget(runId: string): void {
    const fd = this.open.get(runId);
    if (fd === undefined) return;
    this.open.delete(runId);
    closeSync(fd);
  }

  /**
   * Every step of these runs is in the main file: their marks are not needed any more (nor the
   * folder, once no run has one).
   */
  settled(runIds: Iterable<string>): void {
    for (const runId of runIds) {
      this.forget(runId);
      rmSync(this.fileOf(runId), { force: true });
    }
    try {
      rmdirSync(this.dir);
    } catch {
      // Another run's mark is there (ENOTEMPTY), or the folder is gone already.
    }
  }

  /** Closes every mark's file, leaving the marks. */
  close(): void {
    for (const runId of [...this.open.keys()]) this.forget(runId);
  }

  /** Every mark there is; a file that does not read back as one is passed over. */
  marks(): LiveMark[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const marks: LiveMark[] = [];
    for (const name of names) {
      const file = join(this.dir, name);
      let bytes: Buffer;
      try {
        bytes = readFileSync(file);
      } catch {
        continue;
      }
      const text = bytes.toString("latin1");
      const [step, lastSeq] = text.slice(0, TAIL_WIDTH).trim().split(" ").map(Number);
      const end = text.indexOf("\n", TAIL_WIDTH);
      const runId = Buffer.from(
        text.slice(TAIL_WIDTH, end < 0 ? undefined : end),
        "latin1",
      ).toString();
      const row = end >= 0 && bytes[end + 1] === 0 ? storedRow(bytes.subarray(end + 2)) : undefined;
      if (Number.isSafeInteger(step) && Number.isSafeInteger(lastSeq) && runId !== "")
        marks.push({
          runId,
          step: step as number,
          lastSeq: lastSeq as number,
          file,
          ...(row && { row }),
        });
    }
    return marks;
  }

  /**
   * The rows marks hold of runs the store does not (`exists`): their WAL was lost before a
   * checkpoint put the rows in the main file. What they committed is gone with it, and the marks
   * tell it (`lostSteps`).
   */
  lostRows<Row extends { runId: string }>(exists: (runId: string) => boolean): Row[] {
    return this.marks().flatMap((mark) => {
      if (mark.row === undefined || exists(mark.runId)) return [];
      try {
        const row = JSON.parse(mark.row) as Row;
        return row.runId === mark.runId ? [row] : [];
      } catch {
        return [];
      }
    });
  }

  /**
   * Runs whose steps the store lost: a run whose mark says it committed more steps than the
   * store holds (`stored`) — its WAL was deleted or damaged after a crash — as
   * `Session/StoreDamaged`, naming the run, what it had and what is left. The marks are read
   * before the steps, and a run's owner marks a step after committing it: a run being written
   * meanwhile is never taken for one that lost steps.
   */
  lostSteps(
    storePath: string,
    stored: (runId: string) => { step: number; lastSeq: number } | undefined,
    exists: (runId: string) => boolean,
  ): StagechartError[] {
    return this.marks().flatMap((mark) => {
      const left = stored(mark.runId) ?? { step: 0, lastSeq: 0 };
      return left.step >= mark.step ? [] : [stepsLost(storePath, mark, left, exists(mark.runId))];
    });
  }

  /** A file name for any run id: a hash of it (an id may be long, or `..`). */
  private fileOf(runId: string): string {
    return join(this.dir, hash("sha256", runId, "hex").slice(0, 32));
  }
}

/** What follows the NUL of a mark whose row is in base64; a deflated one's starts 0x78. */
const BASE64_ROW = "b";

/**
 * A mark's row: in base64 (deflating it would cost a run about 50 µs), or deflated, as earlier
 * stagecharts wrote it. A mark cut short by a crash gives a row that does not parse, or nothing.
 */
function storedRow(stored: Buffer): string | undefined {
  if (stored[0] === BASE64_ROW.charCodeAt(0))
    return Buffer.from(stored.subarray(1).toString("latin1"), "base64").toString();
  try {
    return inflateSync(stored).toString();
  } catch {
    return undefined;
  }
}
