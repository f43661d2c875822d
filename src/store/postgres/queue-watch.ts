import type pg from "pg";
import { err, ok, type Result } from "../../errors.js";
import { postgresUnavailable } from "./postgres-errors.js";
import { QUEUE_CHANNEL } from "./run-queue.js";

/** A `LISTEN` on the queue's channel; `close()` ends it. */
export interface QueueWatch {
  close(): Promise<void>;
}

/** How long a watch whose connection dropped waits before it listens again. */
const RELISTEN_MS = 1_000;

/**
 * Tells `onQueued` each time a run is queued or queued again (`enqueueRun`, `requeueRun` notify
 * the channel as they commit), on a connection of its own: a `LISTEN` holds its session, so it
 * cannot share the store's pool. A dropped connection is listened on again after a moment; what
 * was queued meanwhile is found by the worker's poll, which stays the fallback.
 */
export async function watchQueue(url: string, onQueued: () => void): Promise<Result<QueueWatch>> {
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const listen = async (): Promise<Result<void>> => {
    const { default: driver } = await import("pg");
    const next = new driver.Client({ connectionString: url });
    next.on("notification", () => onQueued());
    next.on("error", () => relisten(next));
    next.on("end", () => relisten(next));
    try {
      await next.connect();
      await next.query(`LISTEN ${QUEUE_CHANNEL}`);
    } catch (cause) {
      await next.end().catch(() => {});
      return err(postgresUnavailable(url, cause));
    }
    client = next;
    if (closed) await next.end().catch(() => {});
    return ok(undefined);
  };
  const retryLater = () => {
    if (closed) return;
    retry = setTimeout(() => {
      void listen().then((listening) => {
        if (!listening.ok) retryLater();
      });
    }, RELISTEN_MS);
    retry.unref();
  };
  const relisten = (dropped: pg.Client) => {
    if (client !== dropped) return;
    client = undefined;
    retryLater();
  };
  const first = await listen();
  if (!first.ok) return first;
  return ok({
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
      client = undefined;
    },
  });
}
