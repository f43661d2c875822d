import { randomUUID } from "node:crypto";
import { heldSocket, type SocketLoss } from "./held-socket.js";
import type { MessageSink } from "./stream.js";

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

export interface RelayEvents {
  /** Connected: the page that shows the run. */
  opened(pageUrl: string): void;
  /** Will not connect (or never did): why, once. */
  failed(reason: string): void;
}

/**
 * Opens the hosted relay, or (tests) any socket standing in for it; closing a relay that never
 * connected says so.
 */
export type RelayOpener = (events: RelayEvents) => MessageSink;

/** The hosted relay (or `STAGECHART_STATELY_RELAY`, a `ws://` URL standing in for it in tests). */
export const openSkyRelay: RelayOpener = (events) => {
  const session = randomUUID();
  const room = `inspect-${session}`;
  const url =
    process.env.STAGECHART_STATELY_RELAY ??
    `wss://${SKY_RELAY_HOST}/party/${room}?_pk=${randomUUID()}`;
  return socketRelay(url, `${SKY_INSPECT_PAGE}/${session}`, events);
};

function socketRelay(url: string, pageUrl: string, events: RelayEvents): MessageSink {
  const socket = heldSocket(url, RELAY_CONNECT_TIMEOUT_MS, {
    opened: () => events.opened(pageUrl),
    lost: (loss) => events.failed(relayLoss(loss)),
  });
  return {
    // `createSkyInspector` sends superjson; these messages are plain JSON, which it wraps so.
    send: (message) => socket.send(JSON.stringify({ json: message })),
    close: socket.close,
  };
}

function relayLoss(loss: SocketLoss): string {
  switch (loss.kind) {
    case "unreachable":
      return `the hosted Stately inspector is unreachable (${loss.detail})`;
    case "closed":
      return "the relay closed the connection";
    case "never-connected":
      return "not connected by the end of the run; nothing was sent";
  }
}
