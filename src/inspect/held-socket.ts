import { WebSocket } from "ws";

/**
 * One WebSocket that a run's inspection owns: messages sent before it opens are held (the run
 * never waits for the connection), it connects once and never again, and `close` ends it for
 * good. `@statelyai/inspect`'s own adapters reconnect every few seconds, forever, even once
 * stopped, which keeps a finished run's process alive.
 */
export interface HeldSocket {
  send(text: string): void;
  /** Closes at once and for good; a socket that never connected reports it. Never awaited. */
  close(): void;
}

/** Why a socket ended without being closed by its owner. */
export type SocketLoss =
  | { kind: "unreachable"; detail: string }
  | { kind: "closed" }
  | { kind: "never-connected" };

export interface HeldSocketEvents {
  opened?(): void;
  /** The socket is gone (or never came): told once, and nothing more is sent. */
  lost(loss: SocketLoss): void;
}

/** Messages held while connecting (a run's first burst); beyond that the oldest are dropped. */
const MAX_HELD = 10_000;

export function heldSocket(
  url: string,
  connectTimeoutMs: number,
  events: HeldSocketEvents,
): HeldSocket {
  const held: string[] = [];
  let state: "connecting" | "open" | "done" = "connecting";
  const lose = (loss: SocketLoss) => {
    if (state === "done") return;
    state = "done";
    held.length = 0;
    events.lost(loss);
    socket.terminate();
  };
  const socket = new WebSocket(url, { handshakeTimeout: connectTimeoutMs });
  socket.on("open", () => {
    if (state !== "connecting") return;
    state = "open";
    events.opened?.();
    for (const text of held.splice(0)) socket.send(text);
  });
  socket.on("error", (error) => lose({ kind: "unreachable", detail: error.message }));
  socket.on("close", () => lose({ kind: "closed" }));
  return {
    send: (text) => {
      if (state === "open") socket.send(text);
      else if (state === "connecting" && held.push(text) > MAX_HELD) held.shift();
    },
    close: () => {
      if (state === "connecting") lose({ kind: "never-connected" });
      if (state !== "open") return;
      state = "done";
      socket.close();
    },
  };
}
