import { createWebSocketInspector, type StatelyInspectionEvent } from "@statelyai/inspect";
import type { AnyEventObject, InspectionEvent, Observer } from "xstate";
import { isRecord } from "../definitions/pipeline-schema.js";
import { pick } from "./chart-state.js";

/**
 * A run's inspection stream to an inspect server, over `@statelyai/inspect`'s WebSocket
 * inspector. What leaves the process is the shape of the run, never its content: contexts are
 * cut down to ids, states and counters (no prompt, no ctx, no stage output, no tool result),
 * events to their type and the few fields that steer a run, and a snapshot carries its value
 * and status only — the machine definition goes once per actor, in its `@xstate.actor` event.
 */
export function createRunInspector(url: string): {
  inspect: Observer<InspectionEvent>;
  stop(): void;
} {
  const inspector = createWebSocketInspector({
    url,
    sanitizeContext: safeContext,
    sanitizeEvent: safeEvent,
    serialize: slimmed,
    // A run's first burst (every actor of a resumed run) must not be dropped before connecting.
    maxDeferredEvents: 10_000,
  });
  const coalesced = coalescer((event) => inspector.inspect.next?.(withSlimSnapshot(event)));
  return {
    inspect: coalesced,
    stop: () => {
      coalesced.flush();
      inspector.stop();
    },
  };
}

/**
 * Holds a run's inspection events until the event loop turns, then passes on each actor's
 * creation and only its latest snapshot: a run that steps many times between two turns of the
 * loop (a zero-latency model, a burst of transitions) sends one state per actor, not each one.
 * Events, microsteps and actions are dropped: the server draws actors and their snapshots.
 */
export function coalescer(
  send: (event: InspectionEvent) => void,
): Observer<InspectionEvent> & { flush(): void } {
  const pending = new Map<string, { actor?: InspectionEvent; snapshot?: InspectionEvent }>();
  let scheduled: NodeJS.Immediate | undefined;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    const held = [...pending.values()];
    pending.clear();
    for (const { actor, snapshot } of held) {
      if (actor) send(actor);
      if (snapshot) send(snapshot);
    }
  };
  return {
    next: (event) => {
      if (event.type !== "@xstate.actor" && event.type !== "@xstate.snapshot") return;
      const id = event.actorRef.sessionId;
      const entry = pending.get(id) ?? {};
      if (event.type === "@xstate.actor") entry.actor = event;
      else entry.snapshot = event;
      pending.set(id, entry);
      scheduled ??= setImmediate(flush);
    },
    flush,
  };
}

/** Context fields that say where a run is and nothing of what it says. */
const PIPELINE_FIELDS = ["pipelineId", "runId", "asStage", "current", "status", "visits"];
const STAGE_FIELDS = ["runId", "stageExecutionId", "attempt", "turn", "capHit", "verdict"];

export function safeContext(context: unknown): Record<string, unknown> {
  if (!isRecord(context)) return {};
  const stage = context.stage;
  if (isRecord(stage) && typeof stage.id === "string")
    return { stageId: stage.id, ...pick(context, STAGE_FIELDS) };
  if (typeof context.pipelineId !== "string") return {};
  const results = isRecord(context.results) ? context.results : {};
  return {
    ...pick(context, PIPELINE_FIELDS),
    results: Object.fromEntries(
      Object.entries(results).map(([id, r]) => [id, isRecord(r) ? pick(r, ["verdict"]) : {}]),
    ),
    ...(isRecord(context.error) && { error: pick(context.error, ["class", "code"]) }),
  };
}

/** Event fields that steer a run (a grant answer, an override's target); never payloads. */
const EVENT_FIELDS = ["proposalId", "decision", "to", "stage"];

export function safeEvent(event: AnyEventObject): AnyEventObject {
  return { type: event.type, ...pick(event, EVENT_FIELDS) };
}

/** XState snapshots carry their machine; only the value, status and context are inspected. */
function slimSnapshot(snapshot: unknown): Record<string, unknown> {
  if (!isRecord(snapshot)) return {};
  return { status: snapshot.status, value: snapshot.value, context: snapshot.context };
}

function withSlimSnapshot(event: InspectionEvent): InspectionEvent {
  if (event.type !== "@xstate.snapshot") return event;
  return { ...event, snapshot: slimSnapshot(event.snapshot) as never };
}

/** The `@xstate.actor` event reads the actor's whole snapshot: cut it down as well. */
function slimmed(event: StatelyInspectionEvent): StatelyInspectionEvent {
  if (event.type !== "@xstate.actor") return event;
  // Its context was sanitized already; this runs again on events held until the socket opened.
  return { ...event, snapshot: slimSnapshot(event.snapshot) };
}
