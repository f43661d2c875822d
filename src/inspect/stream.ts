import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { configure } from "safe-stable-stringify";
import type { AnyActorRef, AnyEventObject, InspectionEvent, Observer } from "xstate";
import { entriesOf, type StageTable } from "../compiler/stage-table.js";
import { isRecord } from "../definitions/contract.js";
import type { RunInspection } from "../runtime/launch.js";
import { pick } from "./chart-state.js";
import { heldSocket, type SocketLoss } from "./held-socket.js";
import { MODEL_DELTA_MESSAGE } from "./live-replies.js";

/**
 * A run's inspection stream to an inspect server, in `@statelyai/inspect`'s protocol (the
 * messages its `createWebSocketReceiver` reads), over a socket of our own: one connection, never
 * reopened, closed for good by `stop` (its `createWebSocketInspector` reconnects every 5 s
 * forever after an error, stopped or not, keeping a finished run's process alive). What the
 * sanitized stream carries is the shape of the run, never its content: contexts are cut down to
 * ids, states and counters (no prompt, no ctx, no stage output, no tool result), events to their
 * type and the few fields that steer a run, and a snapshot carries its value and status only — the
 * machine definition goes once per actor, in its `@xstate.actor` message. Messages are built
 * here, once each, only for what the coalescer passes on. A server that goes away (or never
 * answers) is told to `lost` once; the run goes on without its stream.
 *
 * Besides, and on this socket only, each piece of a model reply as it streams (keys removed, as
 * `run.events()` has it), in a message of stagechart's own that the local server keeps for its
 * pages while the reply streams: content, so never part of the sanitized stream.
 */
export function createRunInspector(
  url: string,
  lost: (reason: string) => void = () => {},
): RunInspector {
  const socket = heldSocket(url, SERVER_CONNECT_TIMEOUT_MS, {
    lost: (loss) => lost(serverLoss(url, loss)),
  });
  const sanitized = inspectorFor({
    send: (message) => socket.send(JSON.stringify(message)),
    close: socket.close,
  });
  return {
    inspect: {
      // The sanitized observer's own `next`: no call more per inspection event.
      next: sanitized.inspect.next,
      modelDelta: (delta) => socket.send(JSON.stringify({ type: MODEL_DELTA_MESSAGE, delta })),
    },
    stop: sanitized.stop,
  };
}

/** Where a run's sanitized messages go: an inspect server, or the hosted Stately relay. */
export interface MessageSink {
  send(message: StatelyInspectionEvent): void;
  /** Closes at once; never awaited. */
  close(): void;
}

export interface RunInspector {
  /** What a run is given as its `inspect`. */
  inspect: RunInspection;
  /** Sends what is held, then closes the sink without waiting on the network. */
  stop(): void;
}

/** A run's inspection observer whose sanitized messages (never raw events) go to `sink`. */
export function inspectorFor(sink: MessageSink): RunInspector {
  const messages = sanitizedMessages((message) => sink.send(message));
  return {
    inspect: messages,
    stop: () => {
      messages.flush();
      sink.close();
    },
  };
}

/** The inspect server runs on this machine: a connection not made by then will not be. */
const SERVER_CONNECT_TIMEOUT_MS = 3000;

function serverLoss(url: string, loss: SocketLoss): string {
  const server = `the inspect server at ${new URL(url).host}`;
  switch (loss.kind) {
    case "unreachable":
      return `${server} is unreachable (${loss.detail})`;
    case "closed":
      return `${server} closed the connection`;
    case "never-connected":
      return `${server} did not connect before the run ended`;
  }
}

/** A run's inspection events as this stream's sanitized protocol messages, handed to `send`. */
function sanitizedMessages(
  send: (message: StatelyInspectionEvent) => void,
): Observer<InspectionEvent> & { flush(): void } {
  const coalesced = coalescer((event) => send(messageOf(event)));
  return {
    // Promise and callback actors (each model call, each tool) have no states to draw; an event
    // counts when a machine (the pipeline, a stage) receives it.
    next: (event) => {
      if (isMachine(event.actorRef)) coalesced.next?.(event);
    },
    flush: coalesced.flush,
  };
}

/**
 * Holds a run's inspection events until the event loop turns, then passes on each actor's
 * creation, every event the actors received in the order XState processed them, and only each
 * actor's latest snapshot: a run that steps many times between two turns of the loop (a
 * zero-latency model, a burst of transitions) sends one state per actor, not each one, yet an
 * inspector still sees every transition's event (`@xstate.event`, what its sequence and event
 * views draw). Creations go first, so an event never names an actor the receiver has not met.
 * Microsteps and actions are dropped.
 */
export function coalescer(
  send: (event: InspectionEvent) => void,
): Observer<InspectionEvent> & { flush(): void } {
  const pending = new Map<string, { actor?: InspectionEvent; snapshot?: InspectionEvent }>();
  let events: InspectionEvent[] = [];
  let scheduled: NodeJS.Immediate | undefined;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    const held = [...pending.values()];
    const received = events;
    pending.clear();
    events = [];
    for (const { actor } of held) if (actor) send(actor);
    for (const event of received) send(event);
    for (const { snapshot } of held) if (snapshot) send(snapshot);
  };
  return {
    next: (event) => {
      if (event.type === "@xstate.event") events.push(event);
      else if (event.type === "@xstate.actor" || event.type === "@xstate.snapshot") {
        const id = event.actorRef.sessionId;
        const entry = pending.get(id) ?? {};
        if (event.type === "@xstate.actor") entry.actor = event;
        else entry.snapshot = event;
        pending.set(id, entry);
      } else return;
      scheduled ??= setImmediate(flush);
    },
    flush,
  };
}

/** Context fields that say where a run is and nothing of what it says. */
const PIPELINE_FIELDS = ["pipelineId", "runId", "asStage", "current", "status"];
const STAGE_FIELDS = ["runId", "stageExecutionId", "attempt", "turn", "capHit", "verdict"];

export function safeContext(context: unknown): Record<string, unknown> {
  if (!isRecord(context)) return {};
  const stage = context.stage;
  if (isRecord(stage) && typeof stage.id === "string")
    return { stageId: stage.id, ...pick(context, STAGE_FIELDS) };
  if (typeof context.pipelineId !== "string") return {};
  const perStage = (field: unknown): [string, unknown][] =>
    isRecord(field) ? [...entriesOf(field as StageTable<unknown>)] : [];
  return {
    ...pick(context, PIPELINE_FIELDS),
    // Shown by stage, as an inspector's user reads them, not in the context's buckets.
    visits: Object.fromEntries(perStage(context.visits)),
    results: Object.fromEntries(
      perStage(context.results).map(([id, r]) => [id, isRecord(r) ? pick(r, ["verdict"]) : {}]),
    ),
    ...(isRecord(context.error) && { error: pick(context.error, ["class", "code"]) }),
  };
}

/** Event fields that steer a run (a grant answer, an override's target); never payloads. */
const EVENT_FIELDS = ["proposalId", "decision", "to", "stage"];

/** An event cut down to its type and the steering fields that are plain strings. */
export function safeEvent(event: AnyEventObject): AnyEventObject {
  const fields = EVENT_FIELDS.filter((field) => typeof event[field] === "string");
  return { type: event.type, ...pick(event, fields) };
}

function isMachine(actor: unknown): boolean {
  return isRecord((actor as { logic?: { config?: unknown } } | undefined)?.logic?.config);
}

/** XState snapshots carry their machine; only the value, status and safe context are inspected. */
function slimSnapshot(snapshot: unknown): Record<string, unknown> {
  if (!isRecord(snapshot)) return {};
  return { status: snapshot.status, value: snapshot.value, context: safeContext(snapshot.context) };
}

/** The `@statelyai/inspect` release whose message shapes these are (its `_version` field). */
const PROTOCOL_VERSION = "0.7.2";

/** The protocol's message for an actor's creation, an event it received, or its latest snapshot. */
function messageOf(event: InspectionEvent): StatelyInspectionEvent {
  const actor = event.actorRef as AnyActorRef & {
    _parent?: AnyActorRef;
    logic?: { config?: unknown };
  };
  const common = {
    sessionId: actor.sessionId,
    rootId: event.rootId,
    id: null,
    createdAt: `${Date.now()}`,
    _version: PROTOCOL_VERSION,
  };
  if (event.type === "@xstate.event")
    return {
      ...common,
      type: "@xstate.event",
      // A model call's or a tool's actor is never sent: an event from one has no source here.
      sourceId: isMachine(event.sourceRef) ? event.sourceRef?.sessionId : undefined,
      event: safeEvent(event.event),
    } as unknown as StatelyInspectionEvent;
  if (event.type === "@xstate.snapshot")
    return {
      ...common,
      type: "@xstate.snapshot",
      event: safeEvent(event.event),
      snapshot: slimSnapshot(event.snapshot),
    } as unknown as StatelyInspectionEvent;
  const config = actor.logic?.config;
  const name = actor.id === actor.sessionId && isRecord(config) ? String(config.id) : actor.id;
  return {
    ...common,
    type: "@xstate.actor",
    name,
    parentId: actor._parent?.sessionId,
    definition: isRecord(config) ? definitionOf(config) : stringify({ id: name }),
    snapshot: slimSnapshot(actor.getSnapshot()),
  } as unknown as StatelyInspectionEvent;
}

/** As `@statelyai/inspect` writes a definition: functions by name, ten levels deep at most. */
const stringify = configure({ maximumDepth: 10 });
const written = new WeakMap<object, string>();

/** A machine's definition as JSON, written once per machine (every run's actors share them). */
function definitionOf(config: Record<string, unknown>): string {
  const known = written.get(config);
  if (known) return known;
  const text =
    stringify(config, (_key, value) =>
      typeof value === "function" ? { type: value.name } : value,
    ) ?? "{}";
  written.set(config, text);
  return text;
}
