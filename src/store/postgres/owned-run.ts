import { byCodeUnit } from "../../code-unit-order.js";
import type { PipelineEvent } from "../../compiler/pipeline-context.js";
import type { TranscriptEntry } from "../../compiler/stage-types.js";
import type { JsonValue } from "../../definitions/contract.js";
import { type ErrorView, err, ok, type Result, StagechartError } from "../../errors.js";
import type { AuditEvent } from "../../events/audit.js";
import { decodeJournalEntry } from "../../runtime/journal.js";
import { LEASE_TTL_MS, leaseOwner, ownerIsGone } from "../../runtime/lease-owner.js";
import type { ControlStatus, Requester } from "../../runtime/live-control.js";
import type { RunEntries, StepCommit, StepStore } from "../../runtime/persistence.js";
import type { NewRun, RunPatch, RunRecord, StoredSnapshot } from "../../runtime/run-records.js";
import type { OwnedSteps, RunStore } from "../../runtime/store-port.js";
import type { TranscriptRow } from "../../runtime/transcripts.js";
import { VERSION } from "../../version.js";
import type * as z from "../../zod.js";
import { isValidRunId } from "../run-ids.js";
import { leaseLost, noSnapshot, runExists, runIdInvalid, runNotFound } from "../store-errors.js";
import { WriteQueue } from "./write-queue.js";

/** What an owned run knows of its run when it opens: nothing for a run still to be created. */
interface Loaded {
  run?: RunRecord;
  snapshot: Result<StoredSnapshot>;
  audit: AuditEvent[];
  journal: { key: string; value: string }[];
  transcripts: (TranscriptRow & { stageExecutionId: string })[];
}

/**
 * One run on an asynchronous store (PostgreSQL), as the runtime's synchronous `StepStore` port
 * sees it. Holding the run's lease makes this process its only writer, so what the run reads —
 * its row, snapshot, audit log, journal and transcripts — is loaded once and then served from
 * memory, and what it writes goes through an ordered queue: a step gets its sequence numbers
 * here at once and is stored as one transaction after the steps before it. `durable()` resolves
 * when everything written so far is stored (the runtime awaits it before every model or tool
 * call); a failed write or a lost lease makes it reject, and nothing after that is written.
 * Pipeline memory and the control queue are the store's own, read and written straight through.
 */
export class OwnedRun implements StepStore {
  private readonly queue = new WriteQueue();
  private run: RunRecord | undefined;
  private snapshot: Result<StoredSnapshot>;
  private readonly audit: AuditEvent[];
  private readonly journal = new Map<string, string>();
  private readonly transcripts = new Map<string, Map<string, TranscriptEntry>>();
  /** Who holds the run's lease for this process, while it does. */
  private owner: string | undefined;
  private renewing: Promise<void> | undefined;
  /** When the lease was last stored or renewed (as this process's clock saw the answer). */
  private renewedAt = Date.now();

  private constructor(
    private readonly store: RunStore,
    readonly runId: string,
    loaded: Loaded,
    owner: string | undefined,
  ) {
    this.run = loaded.run;
    this.snapshot = loaded.snapshot;
    this.audit = loaded.audit;
    this.owner = owner;
    for (const { key, value } of loaded.journal) this.journal.set(key, value);
    for (const { stageExecutionId, key, entry } of loaded.transcripts)
      this.transcriptOf(stageExecutionId).set(key, entry);
  }

  /**
   * Opens run `runId` of `store` for this process: a run that does not exist yet is loaded empty
   * (the runtime's `createRun` creates it); a run that is not over is leased first, to `owner`
   * when given (a worker that claimed the run under it), a new owner otherwise
   * (`Session/RunLocked` while another live process holds it), then loaded.
   */
  static async open(
    store: RunStore,
    runId: string,
    { leaseTtlMs = LEASE_TTL_MS, owner: claimedBy }: { leaseTtlMs?: number; owner?: string } = {},
  ): Promise<Result<OwnedRun>> {
    const run = await store.getRun(runId);
    if (!run.ok) {
      if (run.error.code !== "Session/RunNotFound") return run;
      const empty = { snapshot: err(noSnapshot(runId)), audit: [], journal: [], transcripts: [] };
      return ok(new OwnedRun(store, runId, empty, undefined));
    }
    let row = run.value;
    let owner = isOver(row) ? undefined : (claimedBy ?? leaseOwner());
    if (owner) {
      const leased = await store.acquireLease(runId, owner, leaseTtlMs, ownerIsGone);
      if (!leased.ok) return leased;
      // The row read before the lease may be stale: its last owner may have ended the run since.
      const again = await store.getRun(runId);
      if (!again.ok || isOver(again.value)) await store.releaseLease(runId, owner);
      if (!again.ok) return again;
      row = again.value;
      if (isOver(row)) owner = undefined;
    }
    // One read at a time: a run has three of its worker's pooled connections (workerPoolSize),
    // and its claim's lease renewal may be holding one meanwhile.
    const snapshot = await store.getSnapshot(runId);
    const audit = await store.auditOf(runId);
    const journal = await store.journalOf(runId);
    const transcripts = await store.transcriptsOf(runId);
    return ok(
      new OwnedRun(store, runId, { run: row, snapshot, audit, journal, transcripts }, owner),
    );
  }

  /** `open`, as the store port's `ownRun` hands a run out: any store may answer with it. */
  static async own(
    store: RunStore,
    runId: string,
    options?: { leaseTtlMs?: number; owner?: string },
  ): Promise<Result<OwnedSteps>> {
    const opened = await OwnedRun.open(store, runId, options);
    if (!opened.ok) return opened;
    const run = opened.value;
    return ok({ steps: run, durable: () => run.durable(), close: () => run.close() });
  }

  /** Resolves once every write so far is stored and no renewal is under way; rejects once one failed. */
  async durable(): Promise<void> {
    await this.renewing;
    await this.queue.drained();
  }

  /**
   * Waits for every write, then gives up the lease if this process still holds it. What stopped
   * the writes, if anything did: the run is then as its last stored step left it.
   */
  async close(): Promise<StagechartError | undefined> {
    await this.durable().catch(() => {});
    const owner = this.owner;
    if (owner) await Promise.resolve(this.store.releaseLease(this.runId, owner)).catch(() => {});
    this.owner = undefined;
    return this.queue.failed;
  }

  createRun(run: NewRun): Result<RunRecord> {
    this.mine(run.runId);
    if (!isValidRunId(run.runId)) return err(runIdInvalid(run.runId));
    if (this.run) return err(runExists(run.runId));
    const at = new Date().toISOString();
    this.run = {
      ...run,
      status: run.status ?? "running",
      createdAt: at,
      updatedAt: at,
      stagechartVersion: VERSION,
    };
    this.write(async () => settled(await this.store.createRun(run)));
    return ok(this.run);
  }

  /** With `releasing`, that owner's lease is given up once the change is stored. */
  updateRun(runId: string, patch: RunPatch, releasing?: string): Result<RunRecord> {
    const run = this.mine(runId) && this.run;
    const updated = run && { ...run, ...patch, updatedAt: new Date().toISOString() };
    if (updated) {
      this.run = updated;
      this.write(async () => settled(await this.store.updateRun(runId, patch)));
    }
    if (releasing !== undefined) this.releaseLease(runId, releasing);
    return updated ? ok(updated) : err(runNotFound(runId));
  }

  getRun(runId: string): Result<RunRecord> {
    return this.mine(runId) && this.run ? ok(this.run) : err(runNotFound(runId));
  }

  getSnapshot(runId: string): Result<StoredSnapshot> {
    this.mine(runId);
    return this.snapshot;
  }

  /** The step's events with the run's next sequence numbers, at once; stored in turn. */
  commitStep(runId: string, step: StepCommit): AuditEvent[] {
    this.mine(runId);
    if (this.queue.failed) throw this.queue.failed;
    const at = new Date().toISOString();
    const first = this.lastSeq(runId) + 1;
    const events = step.events.map((event) => ({ ...event, at: event.at ?? at }));
    const recorded = events.map((event, index): AuditEvent => ({ ...event, seq: first + index }));
    const owner = this.owner;
    this.write(async () => {
      const stored = await this.store.commitStep(runId, { ...step, events, owner });
      // Another writer took sequence numbers meanwhile: this process no longer owns the run.
      if (stored.length > 0 && stored[0]?.seq !== first)
        throw leaseLost(runId, this.owner ?? "nobody");
    });
    this.audit.push(...recorded);
    for (const { key, value } of step.journal ?? []) this.remembered(key, value);
    for (const { stageExecutionId, key, entry } of step.transcripts ?? [])
      this.transcriptOf(stageExecutionId).set(key, entry);
    if (step.snapshot !== undefined) {
      const definitionHash = step.definitionHash ?? this.run?.definitionHash ?? "";
      const stamp = { definitionHash, stagechartVersion: VERSION, updatedAt: at };
      this.snapshot = ok({ snapshot: step.snapshot, ...stamp });
    }
    return recorded;
  }

  auditOf(runId: string, afterSeq = 0): AuditEvent[] {
    this.mine(runId);
    return this.audit.filter((event) => event.seq > afterSeq);
  }

  lastSeq(runId: string): number {
    this.mine(runId);
    return this.audit.at(-1)?.seq ?? 0;
  }

  /**
   * The lease for a launch by `owner`. The run was leased when it was opened (or is created by
   * this launch), so it is taken over from that holder in turn, and cannot be refused here; a
   * store that refuses it anyway stops the run's writes.
   */
  acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone: (holder: string) => boolean = () => false,
  ): Result<void> {
    this.mine(runId);
    const previous = this.owner;
    this.owner = owner;
    const gone = (holder: string) => holder === previous || holderGone(holder);
    this.write(async () => settled(await this.store.acquireLease(runId, owner, ttlMs, gone)));
    return ok(undefined);
  }

  /**
   * Starts a renewal unless one is under way (they never overlap). A lease taken by another
   * stops the run's writes at once; a store that fails to answer does so only once a lease's time
   * has passed since the last renewal. `Session/LeaseLost` (or the store's failure) after that.
   */
  renewLease(runId: string, owner: string, ttlMs: number): Result<void> {
    this.mine(runId);
    if (this.queue.failed) return err(this.queue.failed);
    this.renewing ??= Promise.resolve(this.store.renewLease(runId, owner, ttlMs))
      .then((renewed) => {
        settled(renewed);
        this.renewedAt = Date.now();
      })
      .catch((error: unknown) => {
        // A lease another process took is lost for good; a store that did not answer is asked
        // again at the next renewal, until the lease may have expired meanwhile.
        const taken = error instanceof StagechartError && error.code === "Session/LeaseLost";
        if (taken || Date.now() - this.renewedAt >= ttlMs) this.queue.fail(error);
      })
      .finally(() => {
        this.renewing = undefined;
      });
    return ok(undefined);
  }

  releaseLease(runId: string, owner: string): void {
    this.mine(runId);
    this.write(async () => {
      await this.store.releaseLease(runId, owner);
      if (this.owner === owner) this.owner = undefined;
    });
  }

  get<T>(key: string, shape: z.core.$ZodType<T>): T | undefined {
    const text = this.journal.get(key);
    return text === undefined ? undefined : decodeJournalEntry(key, text, shape);
  }

  record(key: string, value: unknown): void {
    if (this.remembered(key, value)) this.write(async () => this.store.record(key, value));
  }

  put(stageExecutionId: string, key: string, entry: TranscriptEntry): void {
    this.transcriptOf(stageExecutionId).set(key, entry);
    this.write(async () => this.store.put(stageExecutionId, key, entry));
  }

  read(stageExecutionId: string, before?: string): TranscriptEntry[] {
    return this.transcriptRows(stageExecutionId)
      .filter(({ key }) => before === undefined || key < before)
      .map(({ entry }) => entry);
  }

  /**
   * What this run holds, served from memory: a durable run's StepRecorder builds its own maps
   * over the same values and entries (shared, not copied), so only the maps' slots are held twice.
   */
  entriesOf(runId: string): RunEntries {
    this.mine(runId);
    const journal = [...this.journal].map(([key, value]) => ({ key, value }));
    return { journal, transcriptRows: (stageExecutionId) => this.transcriptRows(stageExecutionId) };
  }

  transcriptRows(stageExecutionId: string): TranscriptRow[] {
    const entries = [...(this.transcripts.get(stageExecutionId) ?? [])];
    return entries.sort(([a], [b]) => byCodeUnit(a, b)).map(([key, entry]) => ({ key, entry }));
  }

  async recall(namespace: string, key: string): Promise<JsonValue | undefined> {
    return this.store.recall(namespace, key);
  }

  async remember(namespace: string, key: string, value: JsonValue): Promise<void> {
    return this.store.remember(namespace, key, value);
  }

  recent(namespace: string, limit: number) {
    return this.store.recent(namespace, limit);
  }

  enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ) {
    return this.store.enqueueControl(runId, request);
  }

  pendingControls(runId: string) {
    return this.store.pendingControls(runId);
  }

  controlRequest(id: number) {
    return this.store.controlRequest(id);
  }

  takeControl(id: number) {
    return this.store.takeControl(id);
  }

  settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ) {
    return this.store.settleControl(id, outcome);
  }

  leaseHolder(runId: string) {
    return this.store.leaseHolder(runId);
  }

  private write(work: () => Promise<unknown>): void {
    this.queue.push(work);
  }

  /** Kept unless the key has a value already (a journal entry is a fact); whether it was new. */
  private remembered(key: string, value: unknown): boolean {
    if (this.journal.has(key)) return false;
    this.journal.set(key, JSON.stringify(value));
    return true;
  }

  private transcriptOf(stageExecutionId: string): Map<string, TranscriptEntry> {
    let entries = this.transcripts.get(stageExecutionId);
    if (!entries) {
      entries = new Map();
      this.transcripts.set(stageExecutionId, entries);
    }
    return entries;
  }

  /** Only its own run: anything else is the caller's mistake. */
  private mine(runId: string): true {
    if (runId !== this.runId) throw new Error(`run ${this.runId}'s store was asked about ${runId}`);
    return true;
  }
}

/** A store's answer that must have succeeded: its error is the write's failure. */
function settled(result: Result<unknown>): void {
  if (!result.ok) throw result.error;
}

const isOver = (run: RunRecord): boolean => ["done", "failed", "cancelled"].includes(run.status);
