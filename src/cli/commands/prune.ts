import type { Command } from "commander";
import { StagechartError } from "../../errors.js";
import { DEFAULT_PRUNE_BATCH, type PruneOptions, pruneRuns } from "../../runtime/prune.js";
import type { PruneReport } from "../../runtime/prune-records.js";
import { openExistingAnyStore } from "../any-store.js";
import { refuse } from "../drive.js";
import { type CliIo, EXIT } from "../io.js";
import { STORE_HELP, storePathFor } from "../store.js";

interface PruneFlags {
  store?: string;
  endedBefore?: string;
  keep?: string;
  historyOnly?: boolean;
  dryRun?: boolean;
  batchSize?: string;
  vacuum?: boolean;
  json?: boolean;
}

/** `prune`: retention over the library's `pruneRuns`; the command only prints. */
export function registerPrune(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("prune")
    .description(
      "delete ended runs (done, failed, cancelled) that ended before a date or beyond the newest N, or cut their step history; live runs always stay",
    )
    .option("--store <path|url>", STORE_HELP)
    .option(
      "--ended-before <date|age>",
      "runs that ended before an ISO 8601 date or an age ago (30d, 12h, 2w)",
    )
    .option("--keep <n>", "all but the newest n ended runs (with --ended-before: runs both select)")
    .option(
      "--history-only",
      "keep the runs and their audit logs; cut each one's step history down to its last snapshot",
    )
    .option("--dry-run", "list what would go and the bytes it holds; change nothing")
    .option("--batch-size <n>", `runs per transaction (default ${DEFAULT_PRUNE_BATCH})`)
    .option(
      "--vacuum",
      "give the freed space back afterwards (SQLite: VACUUM, the file shrinks; PostgreSQL: VACUUM)",
    )
    .option("--json", "print the report as JSON")
    .action(async (flags: PruneFlags) => setExit(await prune(flags, io)));
}

async function prune(flags: PruneFlags, io: CliIo): Promise<number> {
  const store = await openExistingAnyStore(flags.store);
  if (!store) {
    io.stdout(
      flags.json
        ? `${JSON.stringify({ runs: [], bytesFreed: 0 })}\n`
        : `nothing to prune (no store at ${storePathFor(flags.store)})\n`,
    );
    return EXIT.done;
  }
  if (!store.ok) return refuse(io, flags.json, store.error);
  try {
    const report = await pruneRuns(store.value, optionsOf(flags));
    if (!report.ok) return refuse(io, flags.json, report.error);
    io.stdout(flags.json ? `${JSON.stringify(report.value, null, 2)}\n` : described(report.value));
    return EXIT.done;
  } catch (error) {
    if (!(error instanceof StagechartError)) throw error;
    return refuse(io, flags.json, error);
  } finally {
    await store.value.close();
  }
}

/** Numbers as given: the library refuses one that does not read, with its code. */
function optionsOf(flags: PruneFlags): PruneOptions {
  return {
    ...(flags.endedBefore !== undefined && { endedBefore: flags.endedBefore }),
    ...(flags.keep !== undefined && { keep: Number(flags.keep) }),
    ...(flags.batchSize !== undefined && { batchSize: Number(flags.batchSize) }),
    historyOnly: flags.historyOnly ?? false,
    dryRun: flags.dryRun ?? false,
    vacuum: flags.vacuum ?? false,
  };
}

function described(report: PruneReport): string {
  const count = `${report.runs.length} run${report.runs.length === 1 ? "" : "s"}`;
  const runs = report.scope === "history" ? `the step history of ${count}` : count;
  const lines = report.runs.map(
    (run) =>
      `  ${run.runId}  ${run.status}  ${run.pipelineId}  ended ${run.endedAt}  ${run.steps} steps  ${bytes(run.bytes)}`,
  );
  if (report.dryRun)
    return `${[`would prune ${runs}, freeing about ${bytes(report.bytesFreed)} (their rows' sizes)`, ...lines].join("\n")}\n`;
  const { before, after } = report.storeBytes;
  const batches = `${report.batches} batch${report.batches === 1 ? "" : "es"}`;
  const size = report.vacuumed
    ? `store ${bytes(before)} → ${bytes(after)} after vacuum`
    : `store ${bytes(before)} → ${bytes(after)}; the freed space is reused by later writes (--vacuum gives it back)`;
  return `${[`pruned ${runs} in ${batches}: ${bytes(report.bytesFreed)} freed (prune ${report.pruneId}); ${size}`, ...lines].join("\n")}\n`;
}

/** `512 B`, `12.3 KiB`, `4.0 MiB`. */
function bytes(count: number): string {
  if (Math.abs(count) < 1024) return `${count} B`;
  if (Math.abs(count) < 1024 * 1024) return `${(count / 1024).toFixed(1)} KiB`;
  return `${(count / 1024 / 1024).toFixed(1)} MiB`;
}
