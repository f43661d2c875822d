import type { Command } from "commander";
import { LEASE_TTL_MS } from "../../runtime/lease-owner.js";
import { tracingFromEnv } from "../../runtime/tracing/otlp.js";
import { isPostgresUrl } from "../../store/open-store.js";
import { redactUrl } from "../../store/postgres/postgres-errors.js";
import { pipelineIdsIn } from "../../worker/pipelines-dir.js";
import {
  runWorker,
  STOP_GRACE_MS,
  type WorkerEvent,
  workerPoolSize,
} from "../../worker/run-worker.js";
import { openAnyStore } from "../any-store.js";
import { refuse } from "../drive.js";
import { type CliIo, EXIT } from "../io.js";
import { positiveInteger, TRACE_CONTENT_HELP } from "../options.js";
import { endTracing } from "../run-host.js";
import { STORE_HELP, storePathFor, storeSpecOf } from "../store.js";

interface WorkerFlags {
  store?: string;
  concurrency: number;
  leaseTtl: number;
  poll: number;
  grace: number;
  untilIdle?: boolean;
  pipelines?: string;
  traceContent?: boolean;
}

/**
 * `worker`: runs the store's queued runs (and those of workers that died) until SIGTERM or
 * SIGINT, which stop it gracefully: no more claims, each run stores its step in flight and is
 * queued again for another worker, the leases are given up, exit 0.
 */
export function registerWorker(program: Command, io: CliIo, setExit: (code: number) => void) {
  program
    .command("worker")
    .description("run the store's queued runs, n at a time, until SIGTERM or SIGINT")
    .option("--store <url>", STORE_HELP)
    .option("--concurrency <n>", "runs driven at once", positiveInteger, 1)
    .option(
      "--lease-ttl <ms>",
      "how long a run's lease lasts unrenewed",
      positiveInteger,
      LEASE_TTL_MS,
    )
    .option("--poll <ms>", "how often an idle worker looks for a run", positiveInteger, 500)
    .option(
      "--grace <ms>",
      "on SIGTERM, how long each run may take to store its step in flight",
      positiveInteger,
      STOP_GRACE_MS,
    )
    .option("--until-idle", "exit once no run is waiting, rather than wait for more")
    .option("--trace-content", TRACE_CONTENT_HELP)
    .option(
      "--pipelines <dir>",
      "take only runs of the pipelines defined in <dir> (each still runs its stored definition)",
    )
    .action(async (flags: WorkerFlags) => setExit(await work(flags, io)));
}

async function work(flags: WorkerFlags, io: CliIo): Promise<number> {
  const pipelineIds =
    flags.pipelines === undefined ? undefined : await pipelineIdsIn(flags.pipelines);
  if (pipelineIds && !pipelineIds.ok) return refuse(io, false, pipelineIds.error);
  const tracing = await tracingFromEnv(process.env, { content: Boolean(flags.traceContent) });
  if (!tracing.ok) return refuse(io, false, tracing.error);
  const store = await openWorkerStore(flags.store, flags.concurrency);
  if (!store.ok) return refuse(io, false, store.error);
  const pool = runWorker({
    store: store.value,
    ...(tracing.value && { tracing: tracing.value }),
    ...(pipelineIds && { pipelineIds: pipelineIds.value }),
    concurrency: flags.concurrency,
    leaseTtlMs: flags.leaseTtl,
    pollMs: flags.poll,
    stopGraceMs: flags.grace,
    ...(flags.untilIdle && { untilIdle: true }),
    onEvent: (event) => io.stdout(`${eventLine(event)}\n`),
  });
  const spec = storeSpecOf(flags.store);
  const where = spec && isPostgresUrl(spec) ? redactUrl(spec) : storePathFor(flags.store);
  const only = pipelineIds ? `, of ${pipelineIds.value.join(", ")} only` : "";
  io.stderr(`worker on ${where}: ${flags.concurrency} run(s) at a time${only}\n`);
  const stop = (signal: string) => {
    io.stderr(`${signal}: stopping (each run stores its step in flight and is queued again)\n`);
    void pool.stop();
  };
  const onTerm = () => stop("SIGTERM");
  const onInt = () => stop("SIGINT");
  process.once("SIGTERM", onTerm);
  process.once("SIGINT", onInt);
  try {
    await pool.done;
    return EXIT.done;
  } finally {
    process.off("SIGTERM", onTerm);
    process.off("SIGINT", onInt);
    await store.value.close();
    await endTracing(tracing.value, io);
  }
}

/** A worker's store: on PostgreSQL, a pool of connections sized for `concurrency` runs at once. */
export const openWorkerStore = (flag: string | undefined, concurrency: number) =>
  openAnyStore(flag, { poolSize: workerPoolSize(concurrency) });

/** One line per run started or ended; errors by code and message, never a URL's password. */
export function eventLine(event: WorkerEvent): string {
  switch (event.kind) {
    case "started":
      return `started ${event.runId}`;
    case "finished": {
      const { outcome } = event;
      const error = outcome.error
        ? ` ${outcome.error.code}: ${oneLine(outcome.error.message)}`
        : "";
      return `${outcome.status} ${event.runId}${error}`;
    }
    case "refused":
      return `refused ${event.runId} ${event.error.code}: ${oneLine(event.error.message)}`;
    case "warning":
      return `warning: ${oneLine(event.message)}`;
  }
}

const oneLine = (text: string): string => text.trim().replace(/\s*\n\s*/g, " ");
