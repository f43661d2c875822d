import type { StatelyInspectionEvent } from "@statelyai/inspect";
import type { GrantRequest } from "../compiler/stage-types.js";
import { isRecord } from "../definitions/contract.js";
import type { ModelDelta } from "../events/run-events.js";
import { runIdOfExecution } from "../store/run-ids.js";
import { type ChartState, chartStateOf } from "./chart-state.js";
import { type AskNews, PendingAsks } from "./live-asks.js";
import { StreamingReplies, type StreamingReply } from "./live-replies.js";

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
 * What the pages watching a run are told of its replies as they stream: each piece, everything
 * held when a page starts watching, and a reply that ended without its turn being recorded (its
 * run's stream closed, its stage stopped). A reply whose turn was recorded is not told: the page
 * shows it until its own audit events have the turn, then the stored transcript.
 */
export type ReplyNews =
  | { type: "reply-delta"; runId: string; delta: ModelDelta }
  | { type: "replies"; runId: string; replies: StreamingReply[] }
  | { type: "reply-ended"; runId: string; stageExecutionId: string };

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

  /**
   * The reply each stage execution's model call is receiving now, kept for a page that starts
   * watching mid-reply; dropped once the stage execution records its turn (its snapshot's turn
   * reaches the reply's), stops, or its run's stream closes. Never stored.
   */
  readonly replies = new StreamingReplies();

  /**
   * `tell` is for every page; `tellWatchers` for the pages watching one run (a reply's content
   * goes to those only).
   */
  constructor(
    private readonly tell: (news: LiveNews) => void,
    private readonly tellWatchers: (runId: string, news: ReplyNews) => void = () => {},
  ) {
    this.asks = new PendingAsks(tell);
  }

  /** A piece of a live run's reply: held, and told to the pages watching the run. */
  receiveDelta(delta: ModelDelta): void {
    this.replies.add(delta);
    this.tellWatchers(delta.runId, { type: "reply-delta", runId: delta.runId, delta });
  }

  /** The stream these stage executions' replies came on closed: their replies ended. */
  endReplies(stageExecutionIds: Iterable<string>): void {
    for (const stageExecutionId of stageExecutionIds) this.endReply(stageExecutionId);
  }

  private endReply(stageExecutionId: string): void {
    const ended = this.replies.drop(stageExecutionId);
    if (ended)
      this.tellWatchers(ended.runId, { type: "reply-ended", runId: ended.runId, stageExecutionId });
  }

  /**
   * A stage's snapshot: the reply it was receiving is over once it recorded the turn, or stopped,
   * or waits to call again after a failed call (the next call streams its reply anew).
   */
  private settleReply(actor: LiveActor): void {
    const context = isRecord(actor.context) ? actor.context : {};
    const { stageExecutionId, attempt, turn } = context;
    if (typeof stageExecutionId !== "string") return;
    const stopped = actor.status !== undefined && actor.status !== "active";
    if (stopped || inState(actor.value, PROVIDER_BACKOFF)) this.endReply(stageExecutionId);
    else if (typeof attempt === "number" && typeof turn === "number")
      this.replies.drop(stageExecutionId, { attempt, turn });
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
      if (this.replies.size > 0) this.settleReply(actor);
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

/** The state a stage waits in after a failed model call, before it calls again. */
const PROVIDER_BACKOFF = "providerBackoff";

/** Whether a state value (a name, or nested states) is in the state named `name`. */
function inState(value: unknown, name: string): boolean {
  if (value === name) return true;
  if (!isRecord(value)) return false;
  return Object.entries(value).some(([key, child]) => key === name || inState(child, name));
}

function snapshotFields(snapshot: unknown): Pick<LiveActor, "value" | "status" | "context"> {
  if (!isRecord(snapshot)) return {};
  return {
    value: snapshot.value,
    ...(typeof snapshot.status === "string" && { status: snapshot.status }),
    context: snapshot.context,
  };
}
