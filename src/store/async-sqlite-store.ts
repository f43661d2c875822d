import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { TranscriptEntry } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";
import { type ErrorView, ok, type Result } from "../errors.js";
import type { ControlStatus, Requester } from "../runtime/control.js";
import type { StepCommit } from "../runtime/persistence.js";
import type * as z from "../zod.js";
import type { AsyncRunStore } from "./postgres/async-run-store.js";
import type { ClaimFilter, DefinitionBundle, NewRun, RunPatch, RunQuery } from "./records.js";
import { SqliteStore, type StoreOptions } from "./sqlite-store.js";

/**
 * The embedded store behind the asynchronous contract: each call is the synchronous one, its
 * throw turned into a rejection. What lets one runtime (and one conformance suite) use either
 * store.
 */
export class AsyncSqliteStore implements AsyncRunStore {
  constructor(private readonly store: SqliteStore) {}

  static open(path: string, options?: StoreOptions): Result<AsyncSqliteStore> {
    const opened = SqliteStore.open(path, options);
    return opened.ok ? ok(new AsyncSqliteStore(opened.value)) : opened;
  }

  async createRun(run: NewRun) {
    return this.store.createRun(run);
  }
  async updateRun(runId: string, patch: RunPatch) {
    return this.store.updateRun(runId, patch);
  }
  async getRun(runId: string) {
    return this.store.getRun(runId);
  }
  async listRuns(query?: RunQuery) {
    return this.store.listRuns(query);
  }
  async getSnapshot(runId: string) {
    return this.store.getSnapshot(runId);
  }
  async commitStep(runId: string, step: StepCommit) {
    return this.store.commitStep(runId, step);
  }
  async auditOf(runId: string, afterSeq?: number) {
    return this.store.auditOf(runId, afterSeq);
  }
  async lastSeq(runId: string) {
    return this.store.lastSeq(runId);
  }
  async stepsOf(runId: string) {
    return this.store.stepsOf(runId);
  }
  async snapshotAtStep(runId: string, step: number) {
    return this.store.snapshotAtStep(runId, step);
  }
  async forkRun(source: string, step: number, run: NewRun, first: StepCommit) {
    return this.store.forkRun(source, step, run, first);
  }
  async enqueueRun(run: Omit<NewRun, "status">) {
    return this.store.enqueueRun(run);
  }
  async saveDefinition(hash: string, bundle: DefinitionBundle) {
    this.store.saveDefinition(hash, bundle);
  }
  async loadDefinition(hash: string) {
    return this.store.loadDefinition(hash);
  }
  async cancelQueuedRun(runId: string, reason?: string) {
    return this.store.cancelQueuedRun(runId, reason);
  }
  async requeueRun(runId: string, owner: string) {
    return this.store.requeueRun(runId, owner);
  }
  async claimRun(owner: string, ttlMs: number, only?: ClaimFilter) {
    return this.store.claimRun(owner, ttlMs, only);
  }
  async get<T>(key: string, shape: z.core.$ZodType<T>) {
    return this.store.get(key, shape);
  }
  async record(key: string, value: unknown) {
    this.store.record(key, value);
  }
  async put(stageExecutionId: string, key: string, entry: TranscriptEntry) {
    this.store.put(stageExecutionId, key, entry);
  }
  async read(stageExecutionId: string, before?: string) {
    return this.store.read(stageExecutionId, before);
  }
  async transcriptRows(stageExecutionId: string) {
    return this.store.transcriptRows(stageExecutionId);
  }
  async journalOf(runId: string) {
    return this.store.journalOf(runId);
  }
  async transcriptsOf(runId: string) {
    return this.store.transcriptsOf(runId);
  }
  async recall(namespace: string, key: string) {
    return this.store.recall(namespace, key);
  }
  async remember(namespace: string, key: string, value: JsonValue) {
    this.store.remember(namespace, key, value);
  }
  async recent(namespace: string, limit: number) {
    return this.store.recent(namespace, limit);
  }
  async acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone?: (holder: string) => boolean,
  ) {
    return this.store.acquireLease(runId, owner, ttlMs, holderGone);
  }
  async renewLease(runId: string, owner: string, ttlMs: number) {
    return this.store.renewLease(runId, owner, ttlMs);
  }
  async releaseLease(runId: string, owner: string) {
    this.store.releaseLease(runId, owner);
  }
  async enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ) {
    return this.store.enqueueControl(runId, request);
  }
  async pendingControls(runId: string) {
    return this.store.pendingControls(runId);
  }
  async controlRequest(id: number) {
    return this.store.controlRequest(id);
  }
  async takeControl(id: number) {
    return this.store.takeControl(id);
  }
  async settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ) {
    return this.store.settleControl(id, outcome);
  }
  async leaseHolder(runId: string) {
    return this.store.leaseHolder(runId);
  }
  async lostSteps() {
    return this.store.lostSteps();
  }
  async close() {
    this.store.close();
  }
}
