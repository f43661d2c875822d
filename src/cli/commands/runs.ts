import { type Command, Option } from "commander";
import { StagechartError } from "../../errors.js";
import type { AuditEvent } from "../../events/audit.js";
import { describeStoredRun } from "../../inspect/run-view.js";
import { formatUsd, type TokenCount } from "../../inspect/token-usage.js";
import type { StoredStatus } from "../../runtime/run-records.js";
import type { RunStore } from "../../runtime/store-port.js";
import { openExistingAnyStore } from "../any-store.js";
import { refuse, waitLine } from "../drive.js";
import { type CliIo, EXIT } from "../io.js";
import { lostStepsOf, warnLost } from "../lost-steps.js";
import { positiveInteger } from "../options.js";
import { progressLine } from "../progress.js";
import { noStoreFor, STORE_HELP, storePathFor } from "../store.js";
import { workflowBreadcrumbOf } from "../workflow-breadcrumb.js";

interface Flags {
  store?: string;
  json?: boolean;
}

interface ListFlags extends Flags {
  limit?: number;
  status?: StoredStatus;
  all?: boolean;
}

const DEFAULT_LIMIT = 50;
const STATUSES: StoredStatus[] = ["queued", "running", "suspended", "done", "failed", "cancelled"];

/** Reading the store: `runs`, `show <runId>`, `audit <runId>`. None creates a store. */
export function registerRuns(program: Command, io: CliIo, setExit: (code: number) => void): void {
  /** Runs `work` on the store, or `none` when there is no store file yet. */
  const withStore =
    (
      work: (store: RunStore, flags: Flags) => number | Promise<number>,
      none: (flags: Flags) => number,
    ) =>
    async (flags: Flags) => {
      const store = await openExistingAnyStore(flags.store);
      if (!store) return setExit(none(flags));
      if (!store.ok) return setExit(refuse(io, flags.json, store.error));
      try {
        setExit(await work(store.value, flags));
      } catch (error) {
        // A shared store that drops under a call: its error names it, never the stack.
        if (!(error instanceof StagechartError)) throw error;
        setExit(refuse(io, flags.json, error));
      } finally {
        await store.value.close();
      }
    };
  const noRun = (runId: string) => (flags: Flags) =>
    refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  const noRuns = (flags: Flags) => {
    io.stdout(flags.json ? "[]\n" : `no runs yet (no store at ${storePathFor(flags.store)})\n`);
    return EXIT.done;
  };
  program
    .command("runs")
    .description(`list the stored runs, newest first (the latest ${DEFAULT_LIMIT} unless told)`)
    .option("--store <path|url>", STORE_HELP)
    .option("--limit <n>", `list at most n runs (default ${DEFAULT_LIMIT})`, positiveInteger)
    .addOption(new Option("--status <status>", "only the runs in this status").choices(STATUSES))
    .option("--all", "list every run (no limit)")
    .option(
      "--json",
      "print the runs as a JSON array of {runId, pipelineId, status, createdAt, updatedAt}",
    )
    .action(
      withStore(async (store, flags: ListFlags) => {
        const limit = flags.all ? undefined : (flags.limit ?? DEFAULT_LIMIT);
        // One row past the page tells whether there are more, without counting them all.
        const page = await store.listRuns({
          ...(flags.status && { status: flags.status }),
          ...(limit !== undefined && { limit: limit + 1 }),
        });
        const runs = page.slice(0, limit);
        warnLost(io, await lostStepsOf(store));
        if (flags.json) io.stdout(`${JSON.stringify(runs, null, 2)}\n`);
        else if (runs.length === 0)
          io.stdout(flags.status ? `no ${flags.status} runs\n` : "no runs yet\n");
        else {
          for (const r of runs)
            io.stdout(`${r.runId}  ${r.status.padEnd(9)}  ${r.pipelineId}  ${r.updatedAt}\n`);
          if (page.length > runs.length)
            io.stdout(`(only the latest ${runs.length} shown: --limit <n> or --all for more)\n`);
        }
        return EXIT.done;
      }, noRuns),
    );
  program
    .command("show")
    .description("one run: its status, where it is, its stage results and timeline")
    .argument("<runId>")
    .option("--store <path|url>", STORE_HELP)
    .option("--json", "print the run as JSON")
    .action((runId: string, flags: Flags) =>
      withStore(async (store) => {
        const lost = await lostStepsOf(store, runId);
        const run = await describeStoredRun(store, runId);
        if (!run.ok) return refuse(io, flags.json, lost[0] ?? run.error, runId);
        warnLost(io, lost);
        warnDamaged(io, runId, run.value.timeline);
        if (flags.json) {
          io.stdout(`${JSON.stringify(run.value, null, 2)}
`);
          return EXIT.done;
        }
        const { status, pipelineId, createdAt, updatedAt, error } = run.value;
        const { state, group, waiting, stages, tokens, timeline } = run.value;
        io.stdout(`run ${runId} · ${pipelineId} · ${status}\n`);
        io.stdout(`started ${createdAt}, last step ${updatedAt}\n`);
        if (group !== undefined) io.stdout(`state: ${JSON.stringify(group)} (parallel group)\n`);
        else if (state !== undefined) io.stdout(`state: ${JSON.stringify(state)}\n`);
        const breadcrumb = await workflowBreadcrumbOf(run.value);
        if (breadcrumb !== undefined) io.stdout(`workflow: ${breadcrumb}\n`);
        if (error) io.stdout(`error: ${error.code}: ${error.message}\n`);
        for (const wait of waiting ?? []) io.stdout(`${waitLine(runId, wait)}\n`);
        if (run.value.wakeAt)
          io.stdout(`wakes at ${run.value.wakeAt}: a worker resumes it then, its wait timed out\n`);
        io.stdout("stages:\n");
        for (const s of stages) {
          const why = s.reason ? ` · ${s.reason}` : "";
          const what = s.description ? ` — ${s.description}` : "";
          io.stdout(`  ${s.stageExecutionId}  ${s.verdict}${why}${what}\n`);
        }
        io.stdout(`tokens: ${tokenLine(tokens.total)}\n`);
        for (const t of tokens.stages) io.stdout(`  ${t.stageExecutionId}  ${tokenLine(t)}\n`);
        if (tokens.unpricedModels.length > 0) {
          io.stdout(
            `cost not counted for ${tokens.unpricedModels.join(", ")}: no price (give one with --prices)\n`,
          );
        }
        io.stdout("timeline:\n");
        for (const e of timeline) {
          const line = e.damaged ? `DAMAGED: ${e.damaged}` : progressLine(e, false);
          if (line) io.stdout(`  ${String(e.seq).padStart(4)}  ${e.at}  ${line}\n`);
        }
        return EXIT.done;
      }, noRun(runId))(flags),
    );
  program
    .command("audit")
    .description("a run's audit events, in order")
    .argument("<runId>")
    .option("--store <path|url>", STORE_HELP)
    .option("--json", "print the events as a JSON array")
    .action((runId: string, flags: Flags) =>
      withStore(async (store) => {
        const lost = await lostStepsOf(store, runId);
        const run = await store.getRun(runId);
        if (!run.ok) return refuse(io, flags.json, lost[0] ?? run.error, runId);
        warnLost(io, lost);
        const events = await store.auditOf(runId);
        warnDamaged(io, runId, events);
        if (flags.json) io.stdout(`${JSON.stringify(events, null, 2)}\n`);
        else for (const e of events) io.stdout(`${auditLine(e)}\n`);
        return EXIT.done;
      }, noRun(runId))(flags),
    );
}

/** Tokens, and the cost of the priced turns among them (`+` when some turns had no price). */
const tokenLine = (t: TokenCount): string => {
  const tokens = `${t.totalTokens} (${t.inputTokens} in, ${t.outputTokens} out)`;
  if (t.costUsd === 0 && t.unpricedTurns > 0) return tokens;
  return `${tokens} · ${formatUsd(t.costUsd)}${t.unpricedTurns > 0 ? "+" : ""}`;
};

/** Damaged events are shown in their place, marked; stderr says which there are. */
function warnDamaged(io: CliIo, runId: string, events: readonly AuditEvent[]): void {
  const damaged = events.filter((e) => e.damaged !== undefined).map((e) => e.seq);
  if (damaged.length === 0) return;
  io.stderr(
    `Session/StoreCorrupt: the store is damaged: run ${runId}'s audit log has damaged events (seq ${damaged.join(", ")}), shown marked DAMAGED\n`,
  );
}

function auditLine(e: AuditEvent): string {
  if (e.damaged) return `${String(e.seq).padStart(4)} ${e.at} DAMAGED: ${e.damaged}`;
  const where = [e.stageExecutionId, e.attempt !== undefined ? `attempt ${e.attempt}` : undefined]
    .filter(Boolean)
    .join(" ");
  return `${String(e.seq).padStart(4)} ${e.at} ${e.type}${where ? ` [${where}]` : ""} ${JSON.stringify(e.payload)}`;
}
