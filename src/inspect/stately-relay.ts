import { randomUUID } from "node:crypto";
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { WebSocket } from "ws";
import type { InspectionEvent, Observer } from "xstate";
import { sanitizedMessages } from "./stream.js";

/**
 * `--stately`: the run's sanitized inspection stream relayed to the hosted Stately inspector, as
 * `@statelyai/inspect`'s `createSkyInspector` does (same relay, room and message encoding), but
 * with a socket this process owns: `createSkyInspector` reconnects forever with no way to close
 * (offline, the process never exits) and prints its link on stdout.
 */
export const SKY_RELAY_HOST = "stately-sky-beta.mellson.partykit.dev";
const SKY_INSPECT_PAGE = "https://stately.ai/registry/inspect";

/** How long the relay may take to connect; the run never waits on it. */
export const RELAY_CONNECT_TIMEOUT_MS = 3000;
/** Messages held while connecting (a run's first burst); beyond that the oldest are dropped. */
const MAX_HELD = 10_000;

/** Where a relay's messages go: the hosted relay, or (tests) any socket standing in for it. */
export interface Relay {
  send(message: StatelyInspectionEvent): void;
  /** Closes at once; a relay that never connected says so. Never awaited. */
  close(): void;
}

export interface RelayEvents {
  /** Connected: the page that shows the run. */
  opened(pageUrl: string): void;
  /** Will not connect (or never did): why, once. */
  failed(reason: string): void;
}

export type RelayOpener = (events: RelayEvents) => Relay;

/** The hosted relay (or `STAGECHART_STATELY_RELAY`, a `ws://` URL standing in for it in tests). */
export const openSkyRelay: RelayOpener = (events) => {
  const session = randomUUID();
  const room = `inspect-${session}`;
  const url =
    process.env.STAGECHART_STATELY_RELAY ??
    `wss://${SKY_RELAY_HOST}/party/${room}?_pk=${randomUUID()}`;
  return socketRelay(url, `${SKY_INSPECT_PAGE}/${session}`, events);
};

function socketRelay(url: string, pageUrl: string, events: RelayEvents): Relay {
  const held: string[] = [];
  let state: "connecting" | "open" | "done" = "connecting";
  const fail = (reason: string) => {
    if (state === "done") return;
    state = "done";
    held.length = 0;
    events.failed(reason);
    socket.terminate();
  };
  const socket = new WebSocket(url, { handshakeTimeout: RELAY_CONNECT_TIMEOUT_MS });
  socket.on("open", () => {
    if (state !== "connecting") return;
    state = "open";
    events.opened(pageUrl);
    for (const text of held.splice(0)) socket.send(text);
  });
  socket.on("error", (error) =>
    fail(`the hosted Stately inspector is unreachable (${error.message})`),
  );
  socket.on("close", () => fail("the relay closed the connection"));
  return {
    send: (message) => {
      // `createSkyInspector` sends superjson; these messages are plain JSON, which it wraps so.
      const text = JSON.stringify({ json: message });
      if (state === "open") socket.send(text);
      else if (state === "connecting" && held.push(text) > MAX_HELD) held.shift();
    },
    close: () => {
      if (state === "connecting") fail("not connected by the end of the run; nothing was sent");
      if (state !== "open") return;
      state = "done";
      socket.close();
    },
  };
}

/**
 * A run's inspection observer for `--stately`: only the stream's sanitized messages reach the
 * relay (never raw inspection events), and `stop` closes it without waiting on the network.
 */
export function relayInspection(openRelay: RelayOpener, events: RelayEvents) {
  const relay = openRelay(events);
  const messages = sanitizedMessages((message) => relay.send(message));
  const inspect: Observer<InspectionEvent> = messages;
  return {
    inspect,
    stop: () => {
      messages.flush();
      relay.close();
    },
  };
}
