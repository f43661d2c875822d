import type { PipelineDefinition } from "../../definitions/pipeline-types.js";
import { err, ok, type Result, type StagechartError, toStagechartError } from "../../errors.js";
import type { Host } from "../../runtime/host.js";
import type { RunHandle, RunResult } from "../../runtime/launch.js";
import { LEASE_TTL_MS, leaseOwner } from "../../runtime/lease-owner.js";
import { resumeRun } from "../../runtime/run.js";
import type { RunPatch } from "../../runtime/run-records.js";
import type { RunStore } from "../../runtime/store-port.js";
import { OwnedRun } from "./owned-run.js";

export interface WorkerPoolOptions {
  store: RunStore;
  /**
   * Takes the next run waiting to be driven and leases it to `owner` in the same transaction
   * (the store's claim query); undefined when none waits.
   */
  claim(owner: string): Promise<string | undefined>;
  /**
   * What a claimed run runs with: its pipeline (the definition it was started with), its host,
   * and what to close once the run is over (its MCP servers). One it cannot prepare is given
   * back to the queue, unless `prepare` ended it (failed it under `owner`'s lease): the slot
   * then waits its `idleMs` (not woken by the queue) before it claims again, so as not to take
   * the run straight back, and a slot of an `untilIdle` pool ends.
   */
  prepare(runId: string, owner: string): Promise<Result<PreparedRun>>;
  /** Runs driven at once (default 1). */
  concurrency?: number;
  /**
   * How long an idle slot waits before it claims again (default 500 ms), unless the store
   * announces a queued run first (`watchQueue`).
   */
  idleMs?: number;
  leaseTtlMs?: number;
  /** A slot that finds no run to claim ends, instead of waiting for one (a draining worker). */
  untilIdle?: boolean;
  /**
   * How long `stop()` lets each run go on to its next stored step before stopping it (default
   * 0: at once).
   */
  stopGraceMs?: number;
  /** Told when a claimed run starts being driven. */
  onStart?(runId: string): void;
  /** Told how each run it drove ended, or why it could not drive it. */
  onRun?(runId: string, outcome: RunResult | StagechartError): void;
  /** Told what the pool does without (a store that cannot announce queued runs: it polls). */
  onWarning?(message: string): void;
}

export interface PreparedRun {
  pipeline: PipelineDefinition;
  host: Host;
  close?(): Promise<void>;
}

export interface WorkerPool {
  /**
   * Stops claiming and stops the runs under way, each once it has stored its next step (or the
   * grace has passed): each keeps its stored steps, its lease is given up and it is queued
   * again, for this or another worker to take. Resolves once every slot has finished.
   */
  stop(): Promise<void>;
  /** Settles once every slot has finished: after `stop()`, or once idle with `untilIdle`. */
  readonly done: Promise<void>;
}

/** A claimed run that could not be launched, and whether it went back to the queue. */
interface Refused {
  error: StagechartError;
  givenBack: boolean;
}

/** A claimed run launched: its handle, how it ends, and what to close once it is over. */
interface Launched {
  handle: RunHandle;
  ending: Ending;
  close?: () => Promise<void>;
}

/** A run being driven, and a way to stop it once it has taken its next step. */
interface LiveRun {
  handle: RunHandle;
  stopAfterNextStep(graceMs: number): void;
}

/**
 * `concurrency` slots, each claiming a run, driving it to its end (or suspension) on the shared
 * store with `resumeRun` under the owner it was claimed with, then claiming the next.
 */
export function startWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const live = new Set<LiveRun>();
  /** Idle slots, woken by a queued run or by `stop()`; slots backing off, by `stop()` only. */
  const sleeping = new Set<() => void>();
  const backingOff = new Set<() => void>();
  const graceMs = options.stopGraceMs ?? 0;
  const leaseTtlMs = options.leaseTtlMs ?? LEASE_TTL_MS;
  let stopping = false;
  /**
   * Wake-ups of idle slots so far (a queued run announced, `stop()`): a slot whose claim was under
   * way when one came, and so was not asleep to hear it, looks again instead of sleeping.
   */
  let wakeUps = 0;
  const wakeAll = (slots: Set<() => void>) => {
    for (const wake of slots) wake();
  };
  const wakeSleeping = () => {
    wakeUps += 1;
    wakeAll(sleeping);
  };
  const idle = (slots: Set<() => void>) =>
    new Promise<void>((resume) => {
      const wake = () => {
        clearTimeout(timer);
        slots.delete(wake);
        resume();
      };
      const timer = setTimeout(wake, options.idleMs ?? 500);
      slots.add(wake);
    });

  const drive = async (runId: string, owner: string): Promise<RunResult | Refused> => {
    const launched = await launchClaimed(runId, owner);
    if (!launched.ok) return launched.error;
    const { handle, ending, close } = launched.value;
    try {
      return await driveLaunched(runId, handle, ending);
    } finally {
      await close?.();
    }
  };

  /**
   * Prepares and launches a claimed run, its lease kept renewed until the launch takes it over. A run
   * not prepared is given back to the queue if it is still this owner's and running (`prepare`
   * did not fail it), its lease released otherwise.
   */
  const launchClaimed = async (
    runId: string,
    owner: string,
  ): Promise<Result<Launched, Refused>> => {
    const claimed = keepLeased(options.store, runId, owner, leaseTtlMs);
    try {
      const prepared = await options
        .prepare(runId, owner)
        .catch((error: unknown) => err(toStagechartError(error, "Session/PrepareFailed")));
      if (!prepared.ok || claimed.lost) {
        const givenBack = await options.store.requeueRun(runId, owner);
        if (!givenBack) await options.store.releaseLease(runId, owner);
        if (!prepared.ok) return err({ error: prepared.error, givenBack });
        await prepared.value.close?.();
        return err({ error: claimed.lost as StagechartError, givenBack });
      }
      const { pipeline, host, close } = prepared.value;
      // The launch takes the lease over as it opens the run, then renews it: this renewal would
      // only take a connection from the run's three (workerPoolSize).
      claimed.stop();
      const ending = endingOf(options.store);
      const launched = await resumeRun(pipeline, runId, {
        host,
        store: ending.store,
        owner,
        leaseTtlMs,
      }).catch(async (error: unknown) => {
        await close?.();
        throw error;
      });
      if (launched.ok) return ok({ handle: launched.value, ending, close });
      await close?.();
      return err({ error: launched.error, givenBack: false });
    } finally {
      claimed.stop();
    }
  };

  const driveLaunched = async (runId: string, handle: RunHandle, ending: Ending) => {
    options.onStart?.(runId);
    const run = liveRun(handle, () => ending.holdBack());
    live.add(run);
    if (stopping) run.stopAfterNextStep(graceMs);
    try {
      const outcome = await handle.result;
      // Stopped by this pool, not parked on a gate nor by a failure: another worker takes it on,
      // its lease given up in the same transaction as it is queued again.
      await ending.finish(
        stopping && outcome.status === "suspended" && !outcome.waiting && !outcome.error,
      );
      return outcome;
    } finally {
      live.delete(run);
    }
  };

  // A store that fails under a claim or a launch is waited out: the slot tries again later.
  const slot = async () => {
    while (!stopping) {
      const owner = leaseOwner();
      const wakeUpsBefore = wakeUps;
      const runId = await options.claim(owner).catch(() => undefined);
      if (runId === undefined) {
        if (options.untilIdle) return;
        if (wakeUps === wakeUpsBefore) await idle(sleeping);
        continue;
      }
      const outcome = await drive(runId, owner).catch(
        (error: unknown): Refused => ({
          error: toStagechartError(error, "Session/StoreUnavailable"),
          givenBack: false,
        }),
      );
      options.onRun?.(runId, "status" in outcome ? outcome : outcome.error);
      if ("givenBack" in outcome && outcome.givenBack) {
        if (options.untilIdle) return;
        if (!stopping) await idle(backingOff);
      }
    }
  };

  const done = (async () => {
    const watch = options.untilIdle ? undefined : await watchQueue(options, wakeSleeping);
    try {
      await Promise.all(Array.from({ length: options.concurrency ?? 1 }, slot));
    } finally {
      await watch?.close();
    }
  })();
  return {
    done,
    async stop() {
      stopping = true;
      wakeSleeping();
      wakeAll(backingOff);
      for (const run of live) run.stopAfterNextStep(graceMs);
      await done;
    },
  };
}

/**
 * Wakes idle slots as soon as a run is queued, where the store announces it (PostgreSQL's
 * `LISTEN`); the poll stays, for an announcement lost and for a dead worker's expired lease.
 */
async function watchQueue(options: WorkerPoolOptions, wake: () => void) {
  const watch = await options.store.watchQueue?.(wake);
  if (watch && !watch.ok)
    options.onWarning?.(`not told of queued runs (${watch.error.message}): polling only`);
  return watch?.ok ? watch.value : undefined;
}

/**
 * Renews a claimed run's lease every third of its time until `stop()`: from the claim until the
 * run's launch, which renews it from then on. A renewal refused (another worker took the run) is
 * `lost`; one the store fails to answer is tried again at the next.
 */
function keepLeased(store: RunStore, runId: string, owner: string, ttlMs: number) {
  let lost: StagechartError | undefined;
  let renewing = false;
  const renew = async () => {
    renewing = true;
    const renewed = await (async () => store.renewLease(runId, owner, ttlMs))().catch(() =>
      ok(undefined),
    );
    if (!renewed.ok) lost = renewed.error;
    renewing = false;
  };
  const timer = setInterval(() => {
    if (!renewing && !lost) void renew();
  }, ttlMs / 3);
  return {
    get lost() {
      return lost;
    },
    stop: () => clearInterval(timer),
  };
}

/** The store a run is driven on, and its last two writes, kept back once the pool stops it. */
interface Ending {
  store: RunStore;
  holdBack(): void;
  /**
   * Gives the run back (`requeue`: the pool stopped it) or writes what was kept back (it ended
   * otherwise: parked on a gate, done, failed).
   */
  finish(requeue: boolean): Promise<void>;
}

/**
 * A run ends by storing its status, then giving up its lease. For a run the pool stopped, a
 * worker killed between the two would leave it `suspended`, which no worker takes; so once the
 * pool asks it to stop, those two writes are kept back, and the pool gives the run back with
 * `requeueRun` instead (lease and status in one transaction). Killed before that, the run is
 * `running` under a lease that expires, and another worker takes it over.
 */
function endingOf(store: RunStore): Ending {
  let holding = false;
  let status: RunPatch | undefined;
  let lease: [runId: string, owner: string] | undefined;
  const kept: Partial<RunStore> = {
    // Every store's run goes through an owned run over this view, so that what it writes as
    // it stops (its status, its lease) passes here.
    ownRun: (runId, options) => OwnedRun.own(view, runId, options),
    async updateRun(runId, patch) {
      if (!holding || patch.status !== "suspended" || patch.error)
        return store.updateRun(runId, patch);
      status = patch;
      return store.getRun(runId);
    },
    async releaseLease(runId, owner) {
      if (!holding) return store.releaseLease(runId, owner);
      lease = [runId, owner];
    },
  };
  const view: RunStore = new Proxy(store, {
    get: (target, name) => {
      const own = kept[name as keyof RunStore] ?? Reflect.get(target, name, target);
      return typeof own === "function" && !(name in kept) ? own.bind(target) : own;
    },
  });
  return {
    store: view,
    holdBack: () => {
      holding = true;
    },
    async finish(requeue) {
      holding = false;
      // The lease is the launch's (a run takes it over from its claimer as it launches).
      if (!lease) return;
      if (requeue) await store.requeueRun(...lease);
      else {
        if (status) await store.updateRun(lease[0], status);
        await store.releaseLease(...lease);
      }
    },
  };
}

/**
 * Watches the run's events so that a stop can wait for the next one: an event is a step taken
 * (a model reply, a tool result, a stage entered or left), which the run stores before it stops.
 */
function liveRun(handle: RunHandle, beforeStop: () => void): LiveRun {
  let seen = 0;
  let onEvent = () => {};
  void (async () => {
    for await (const _ of handle.events({ deltas: false })) {
      seen++;
      onEvent();
    }
  })();
  let stopRequested = false;
  return {
    handle,
    stopAfterNextStep(graceMs) {
      if (stopRequested) return;
      stopRequested = true;
      beforeStop();
      if (graceMs <= 0) return handle.stop();
      const before = seen;
      const stop = () => {
        clearTimeout(timer);
        onEvent = () => {};
        // After the step's own settling (a microtask) has handed it to the store.
        setImmediate(() => handle.stop());
      };
      const timer = setTimeout(stop, graceMs);
      onEvent = () => {
        if (seen > before) stop();
      };
    },
  };
}
