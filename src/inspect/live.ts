import type { StatelyInspectionEvent } from "@statelyai/inspect";
import type { GrantRequest } from "../compiler/stage-types.js";
import { isRecord } from "../definitions/contract.js";
import { runIdOfExecution } from "../store/run-ids.js";
import { type ChartState, chartStateOf } from "./chart-state.js";
import { type AskNews, PendingAsks } from "./live-asks.js";

/** One actor seen on an inspection stream. */
interface LiveActor {
  sessionId: string;
  rootId: string;
  parentId?: string;
  name: string;
  /** The machine's config as JSON, sent once with the actor. */
  definition?: string;
  value?: unknown;
  status?: string;
  context?: unknown;
}

/** A root actor on the stream: a stagechart run (its runId known) or any XState app's machine. */
export interface LiveRoot {
  rootId: string;
  name: string;
  runId?: string;
  /** The root's last status; `stopped` once its stream closed while it was still active. */
  status?: string;
  /** Its stream closed: nothing more will come, and the state is the last it sent. */
  closed?: true;
  value?: unknown;
  state: ChartState;
  /** Bytes received on the stream for this root so far. */
  bytes: number;
  messages: number;
}

export interface PendingGrant extends GrantRequest {
  runId: string;
}

/** What the registry tells the pages. */
export type LiveNews =
  | { type: "live"; root: LiveRoot }
  | { type: "grants"; runId: string; grants: PendingGrant[] }
  | AskNews;

/**
 * The inspect server's live view: every actor the inspection streams reported, folded per root
 * into the chart state the page highlights, and the grant requests live runs wait for.
 */
export class LiveRegistry {
  private readonly actors = new Map<string, LiveActor>();
  /** Each root's actors, so folding one root's state does not walk every root's. */
  private readonly members = new Map<string, Map<string, LiveActor>>();
  private readonly roots = new Map<string, { bytes: number; messages: number }>();
  /** The roots whose stream closed. */
  private readonly ended = new Set<string>();
  private readonly grants = new Map<string, { grant: PendingGrant; answer: Answerer }>();

  /** The questions live runs' ask stages wait on. */
  readonly asks: PendingAsks;

  constructor(private readonly tell: (news: LiveNews) => void) {
    this.asks = new PendingAsks(tell);
  }

  /** One message of `@statelyai/inspect`'s protocol, as received (its size counted). */
  receive(message: StatelyInspectionEvent, bytes: number): void {
    const rootId = message.rootId ?? message.sessionId;
    const counts = this.roots.get(rootId) ?? { bytes: 0, messages: 0 };
    counts.bytes += bytes;
    counts.messages += 1;
    this.roots.set(rootId, counts);
    if (message.type === "@xstate.actor") {
      const actor: LiveActor = {
        sessionId: message.sessionId,
        rootId,
        ...(message.parentId && { parentId: message.parentId }),
        name: message.name,
        ...(message.definition && { definition: message.definition }),
        ...snapshotFields(message.snapshot),
      };
      this.actors.set(message.sessionId, actor);
      const members = this.members.get(rootId) ?? new Map<string, LiveActor>();
      this.members.set(rootId, members.set(message.sessionId, actor));
    } else if (message.type === "@xstate.snapshot") {
      const actor = this.actors.get(message.sessionId);
      if (!actor) return;
      Object.assign(actor, snapshotFields(message.snapshot));
    } else return;
    const root = this.root(rootId);
    if (root) this.tell({ type: "live", root });
  }

  /**
   * The stream these roots came on closed (the app stopped, or went away): their live view ends
   * with the last state they sent, a root still active then shown `stopped`, and pages are told.
   */
  end(rootIds: Iterable<string>): void {
    for (const rootId of rootIds) {
      if (this.ended.has(rootId)) continue;
      this.ended.add(rootId);
      const root = this.root(rootId);
      if (root) this.tell({ type: "live", root });
    }
  }

  /** Every root seen, newest last. */
  list(): LiveRoot[] {
    return [...this.roots.keys()].flatMap((id) => {
      const root = this.root(id);
      return root ? [root] : [];
    });
  }

  root(rootId: string): LiveRoot | undefined {
    const top = this.actors.get(rootId);
    if (!top) return undefined;
    const members = [...(this.members.get(rootId)?.values() ?? [])];
    const context = isRecord(top.context) ? top.context : {};
    const counts = this.roots.get(rootId) ?? { bytes: 0, messages: 0 };
    const closed = this.ended.has(rootId);
    const status = closed && (top.status ?? "active") === "active" ? "stopped" : top.status;
    return {
      rootId,
      name: top.name,
      ...(typeof context.runId === "string" && { runId: context.runId }),
      ...(status && { status }),
      ...(closed && { closed: true as const }),
      value: top.value,
      state: chartStateOf(members),
      ...counts,
    };
  }

  /** The live root of a stagechart run, the latest when the run was resumed in between. */
  rootOfRun(runId: string): LiveRoot | undefined {
    return this.list().findLast((root) => root.runId === runId);
  }

  definitionOf(rootId: string): string | undefined {
    return this.actors.get(rootId)?.definition;
  }

  /** A live run asks: the pages show the request until it is answered or withdrawn. */
  ask(request: GrantRequest, answer: Answerer): void {
    const grant = { ...request, runId: runIdOfExecution(request.stageExecutionId) };
    this.grants.set(request.proposalId, { grant, answer });
    this.tellGrants(grant.runId);
  }

  withdraw(proposalId: string): void {
    const pending = this.grants.get(proposalId);
    if (!pending) return;
    this.grants.delete(proposalId);
    this.tellGrants(pending.grant.runId);
  }

  pendingOf(runId: string): PendingGrant[] {
    return [...this.grants.values()].filter((p) => p.grant.runId === runId).map((p) => p.grant);
  }

  /** Answers a live run's request; false when no live run waits for it. */
  answer(runId: string, proposalId: string, decision: "approve" | "deny"): boolean {
    const pending = this.grants.get(proposalId);
    if (!pending || pending.grant.runId !== runId) return false;
    pending.answer(decision);
    this.withdraw(proposalId);
    return true;
  }

  private tellGrants(runId: string): void {
    this.tell({ type: "grants", runId, grants: this.pendingOf(runId) });
  }
}

export type Answerer = (decision: "approve" | "deny") => void;

function snapshotFields(snapshot: unknown): Pick<LiveActor, "value" | "status" | "context"> {
  if (!isRecord(snapshot)) return {};
  return {
    value: snapshot.value,
    ...(typeof snapshot.status === "string" && { status: snapshot.status }),
    context: snapshot.context,
  };
}
