import type { TranscriptEntry } from "../compiler/stage-types.js";
import {
  type AuditEvent,
  type AuditEventInput,
  type AuditSink,
  isoStamps,
  stamped,
} from "../events/audit.js";
import type * as z from "../zod.js";
import { decodeJournalEntry, type Journal } from "./journal.js";
import type { ControlSettlement } from "./live-control.js";
import type { RunEntries, StepCommit, StepStore } from "./persistence.js";
import { OrderedTranscript, type TranscriptStore } from "./transcripts.js";

/**
 * The audit sink, journal and transcripts of a durable run. What a step writes — audit events,
 * journal entries, transcript entries — is held until the step is committed together with the
 * snapshot it led to, in one transaction: a call's recorded result becomes
 * durable with the step that consumes it, never apart. Sequence numbers are assigned here in
 * the order the store will give them. What the run recorded before (a resume finds it in the
 * store) is read from the store once, when first needed, then kept here and updated by every
 * commit: no call reads the store (a read per call grew with the run).
 */
export class StepRecorder implements AuditSink, Journal, TranscriptStore {
  /** The step's events as emitted (their `seq` is the store's next; it numbers them itself). */
  private pending: AuditEvent[] = [];
  private readonly stamp = isoStamps(Date.now);
  private readonly journal = new Map<string, unknown>();
  private transcripts: NonNullable<StepCommit["transcripts"]> = [];
  private controls: ControlSettlement[] = [];
  /** Each stage execution's transcript, read from the store once then kept up to date here. */
  private readonly kept = new Map<string, OrderedTranscript>();
  /**
   * The journal's keys once each: what this process committed (the value), and what the store
   * had before (as JSON text, in `stored`), a key's first value only.
   */
  private readonly committed = new Map<string, unknown>();
  private stored?: {
    journal: Map<string, string>;
    transcriptRows: RunEntries["transcriptRows"];
  };
  private nextSeq: number;
  /**
   * Where the store's writes finish after `commit` returns: resolves once the step under way
   * (whose settling is already queued as the caller runs) is committed, and the store has
   * stored every commit so far. What is emitted between steps waits for the next, as on SQLite.
   */
  readonly durable?: () => Promise<void>;

  constructor(
    private readonly store: StepStore,
    private readonly runId: string,
    private readonly definitionHash: string,
  ) {
    this.nextSeq = store.lastSeq(runId) + 1;
    const stored = store.durable?.bind(store);
    if (stored)
      this.durable = async () => {
        await new Promise((settle) => setImmediate(settle));
        await stored();
      };
  }

  /** The event as the store will keep it: the same seq, and the moment it happened. */
  emit(input: AuditEventInput): AuditEvent {
    // An event that says when it happened (a stage phase's end) keeps that moment.
    const event = stamped(this.nextSeq++, input.at ?? this.stamp(), input);
    this.pending.push(event);
    return event;
  }

  /** A control request this run took: settled by the step that records it. */
  settle(settlement: ControlSettlement): void {
    this.controls.push(settlement);
  }

  get<T>(key: string, shape: z.core.$ZodType<T>): T | undefined {
    const text = this.storedEntries().journal.get(key);
    if (text !== undefined) return decodeJournalEntry(key, text, shape);
    const recorded = this.committed.has(key) ? this.committed : this.journal;
    if (!recorded.has(key)) return undefined;
    return decodeJournalEntry(key, JSON.stringify(recorded.get(key)), shape);
  }

  /** A journal entry is a fact: the first value recorded under a key is the one kept. */
  record(key: string, value: unknown): void {
    if (this.journal.has(key) || this.committed.has(key)) return;
    if (!this.storedEntries().journal.has(key)) this.journal.set(key, value);
  }

  put(stageExecutionId: string, key: string, entry: TranscriptEntry): void {
    this.transcriptOf(stageExecutionId).put(key, entry);
    this.transcripts.push({ stageExecutionId, key, entry });
  }

  read(stageExecutionId: string, before?: string): TranscriptEntry[] {
    return this.transcriptOf(stageExecutionId).before(before);
  }

  commit(snapshot?: unknown): void {
    const { pending: events, transcripts, controls } = this;
    const journal =
      this.journal.size === 0
        ? undefined
        : Array.from(this.journal, ([key, value]) => ({ key, value }));
    this.journal.clear();
    if (transcripts.length > 0) this.transcripts = [];
    if (controls.length > 0) this.controls = [];
    const written = events.length + transcripts.length + controls.length;
    if (snapshot === undefined && written === 0 && journal === undefined) return;
    if (events.length > 0) this.pending = [];
    // What a step did not write is left undefined, not spread in conditionally: a commit is made
    // at every step.
    this.store.commitStep(this.runId, {
      snapshot,
      definitionHash: this.definitionHash,
      events,
      journal,
      transcripts: transcripts.length > 0 ? transcripts : undefined,
      controls: controls.length > 0 ? controls : undefined,
    });
    for (const { key, value } of journal ?? []) this.committed.set(key, value);
  }

  /**
   * Loaded before its first put too, so that the copy kept here is the whole transcript (and as
   * `RunEntries.transcriptRows` requires).
   */
  private transcriptOf(stageExecutionId: string): OrderedTranscript {
    let transcript = this.kept.get(stageExecutionId);
    if (!transcript) {
      const rows = this.storedEntries().transcriptRows(stageExecutionId);
      transcript = OrderedTranscript.of(rows);
      this.kept.set(stageExecutionId, transcript);
    }
    return transcript;
  }

  /** What the run recorded before this process took it, read from the store once. */
  private storedEntries() {
    if (!this.stored) {
      const { journal, transcriptRows } = this.store.entriesOf(this.runId);
      this.stored = {
        journal: new Map(journal.map(({ key, value }) => [key, value])),
        transcriptRows,
      };
    }
    return this.stored;
  }
}
