import { hostname, userInfo } from "node:os";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { Awaitable } from "../definitions/memory.js";
import { type ErrorView, err, ok, type Result, StagechartError } from "../errors.js";
import type { AuditSink } from "../events/audit.js";
import { ownerIsGone } from "./lease-owner.js";

/** Who asked for a control event: the asking process, and a name it gave (`--by`). */
export interface Requester {
  pid: number;
  host: string;
  user: string;
  by?: string;
}

/**
 * `pending` until the run's owner takes it (`taken`: it is being applied, its requester may no
 * longer withdraw it), then `applied` or `refused` with the step that records it; `expired` when
 * withdrawn, or found past its expiry, while still pending.
 */
export type ControlStatus = "pending" | "taken" | "applied" | "refused" | "expired";

/** A control event queued for the live owner of a run. */
export interface ControlRequest {
  id: number;
  runId: string;
  event: PipelineEvent;
  requester: Requester;
  requestedAt: string;
  /** Epoch ms, on the store's clock, after which nobody may take it. */
  expiresAt: number;
  status: ControlStatus;
  /** Why it was refused, or why it expired. */
  error?: ErrorView;
  settledAt?: string;
}

/** How the step that takes a request settles it; stored with that step (`StepCommit.controls`). */
export interface ControlSettlement {
  id: number;
  status: "applied" | "refused";
  /** Why it was refused. */
  error?: ErrorView;
}

/** A store's answer: at once from an embedded store, later from one across the network. */

/**
 * The control queue of a store: `cancel`, `override` and `redo` for a
 * run that another live process owns are queued here, and that owner takes them. Its readers
 * await every answer, so a store may give them synchronously (SQLite) or not (PostgreSQL).
 */
export interface ControlQueue {
  enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ): Awaitable<ControlRequest>;
  /**
   * The run's requests not settled yet, oldest first: pending ones (expired ones included) and
   * taken ones, which only a previous owner, now gone, can have taken.
   */
  pendingControls(runId: string): Awaitable<ControlRequest[]>;
  /**
   * Marks a request `taken` for the run's owner, on the store's clock: true when it was pending
   * and not past its expiry, or already taken; false when it is settled or past its expiry.
   */
  takeControl(id: number): Awaitable<boolean>;
  controlRequest(id: number): Awaitable<ControlRequest | undefined>;
  /** Settles (withdraws) a request that is still pending; false when taken or settled first. */
  settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ): Awaitable<boolean>;
  /** The run's lease holder, while a lease row exists. */
  leaseHolder(runId: string): Awaitable<LeaseHolder | undefined>;
}

/** A lease row; `expiresInMs` is measured on the store's clock (what leases expire by). */
type LeaseHolder = { owner: string; expiresAt: number; expiresInMs: number };

/** This process, as a requester. */
export function thisRequester(by?: string): Requester {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = String(process.getuid?.() ?? "unknown");
  }
  return { pid: process.pid, host: hostname(), user, ...(by && { by }) };
}

/** How often a live owner looks at its control queue: far more often than it renews its lease. */
export const CONTROL_POLL_MS = 200;

/** How long a requester waits for the owner by default. */
export const CONTROL_TIMEOUT_MS = 30_000;

/**
 * Takes the run's pending control requests, oldest first, as its live owner: each is marked
 * `taken` in the store first (from then on its requester cannot withdraw it), then audited with
 * who asked (`ControlRequested`, and `RequestRefused` with why `check` refuses it) and, applied,
 * sent to the run. Its settlement (`applied`, or `refused` with the refusal) goes with the step
 * that records it, in one transaction; a crash before that step is stored leaves it `taken`, and
 * the next owner (only a lease holder takes requests) applies it then. One past its expiry on the
 * store's clock is settled `expired` instead. Whether anything was taken.
 */
export async function takeControlRequests(
  queue: ControlQueue,
  runId: string,
  run: {
    check(event: PipelineEvent): StagechartError | undefined;
    send(event: PipelineEvent): void;
    /** The run's next step: what it audits, and the requests it settles. */
    recorder: AuditSink & { settle(settlement: ControlSettlement): void };
    /** Requests this owner took, whose steps may not be stored yet. */
    taken: Set<number>;
  },
): Promise<boolean> {
  let taken = false;
  for (const request of await queue.pendingControls(runId)) {
    const { id, event, requester } = request;
    if (run.taken.has(id)) continue;
    if (!(await queue.takeControl(id))) {
      await queue.settleControl(id, {
        status: "expired",
        error: expiredBeforeTaken(request).toModelView(),
      });
      continue;
    }
    run.taken.add(id);
    taken = true;
    const asked = { requestId: id, control: event, requestedBy: requester };
    run.recorder.emit({ type: "ControlRequested", runId, payload: asked });
    const refusal = run.check(event)?.toModelView();
    if (refusal) {
      run.recorder.emit({ type: "RequestRefused", runId, payload: { ...asked, error: refusal } });
      run.recorder.settle({ id, status: "refused", error: refusal });
    } else {
      run.recorder.settle({ id, status: "applied" });
      run.send(event);
    }
  }
  return taken;
}

const expiredBeforeTaken = (request: ControlRequest) =>
  new StagechartError(
    "Session/ControlExpired",
    `nobody took the ${request.event.type} request for run ${request.runId} before it expired`,
    { requestId: request.id, reason: "timeout" },
  );

export interface ControlOptions {
  /** Who asks, for the audit log (besides this process's pid, host and user). */
  by?: string;
  /** How long to wait for the owner to take the request (default 30 s). */
  timeoutMs?: number;
  /** How often to look for the outcome (default 100 ms). */
  pollMs?: number;
}

/**
 * Sends OVERRIDE, REDO or CANCEL to a run that another live process owns, through the store's
 * control queue, and waits for that owner to apply it. Ok with the request once it is applied;
 * the owner's refusal as the error (`Session/IllegalTransition`, …); `Session/ControlTimeout`
 * when the owner did not take it in time, `Session/ControlExpired` when the run stopped being
 * live first (its owner killed, or the run ended or suspended): either way the request is
 * withdrawn, so it never takes effect later. Once the owner has taken it, it is no longer
 * withdrawn: this waits for its outcome, and if the owner stops before storing it, answers
 * `Session/ControlTaken` (whoever resumes the run applies it). `Session/RunNotLive` when no
 * process owns the run now: resume it with the event (`resumeRun(…, {control})`) instead.
 * Times are the store's (its expiry, the lease's) or this process's elapsed time, never this
 * machine's clock against another's.
 */
export async function requestControl(
  store: ControlQueue & { getRun(runId: string): Awaitable<Result<unknown>> },
  runId: string,
  event: PipelineEvent,
  options: ControlOptions = {},
): Promise<Result<ControlRequest>> {
  const run = await store.getRun(runId);
  if (!run.ok) return run;
  if (!holderIsLive(await store.leaseHolder(runId)))
    return err(notLive(runId, "no live process owns it"));
  const timeoutMs = options.timeoutMs ?? CONTROL_TIMEOUT_MS;
  const requester = thisRequester(options.by);
  const asked = performance.now();
  const { id } = await store.enqueueControl(runId, { event, requester, timeoutMs });
  for (;;) {
    await sleep(options.pollMs ?? 100);
    const now = await store.controlRequest(id);
    if (now?.status === "applied") return ok(now);
    if (now?.status !== "pending" && now?.status !== "taken") {
      const error = now?.error ?? {
        code: "Session/ControlExpired",
        message: "expired",
        context: {},
      };
      return err(new StagechartError(error.code, error.message, error.context));
    }
    const live = holderIsLive(await store.leaseHolder(runId));
    if (now.status === "taken") {
      if (!live) return err(takenByGoneOwner(runId, id, event));
      continue;
    }
    const withdraw = !live
      ? new StagechartError(
          "Session/ControlExpired",
          `run ${runId} stopped being live before its owner took the ${event.type} request (its owner is gone, or the run ended or suspended); the request is withdrawn`,
          { runId, requestId: id, reason: "not-live" },
        )
      : performance.now() - asked >= timeoutMs
        ? new StagechartError(
            "Session/ControlTimeout",
            `run ${runId}'s owner did not take the ${event.type} request within ${timeoutMs} ms; the request is withdrawn`,
            { runId, requestId: id, timeoutMs },
          )
        : undefined;
    const expired = { status: "expired" as const, error: withdraw?.toModelView() };
    if (withdraw && (await store.settleControl(id, expired))) return err(withdraw);
  }
}

/** Whether a lease holder (`leaseHolder`'s answer) is a live process whose lease has not expired. */
export const holderIsLive = (holder: LeaseHolder | undefined): boolean =>
  holder !== undefined && holder.expiresInMs > 0 && !ownerIsGone(holder.owner);

const takenByGoneOwner = (runId: string, requestId: number, event: PipelineEvent) =>
  new StagechartError(
    "Session/ControlTaken",
    `run ${runId}'s owner took the ${event.type} request but stopped before storing its outcome; it is applied when the run is resumed`,
    { runId, requestId },
  );

const notLive = (runId: string, why: string) =>
  new StagechartError("Session/RunNotLive", `run ${runId} is not live: ${why}`, { runId });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
