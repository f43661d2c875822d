import { WebSocket } from "ws";
import type { Interactor } from "../compiler/interactor.js";
import type { GrantDecision } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { LiveRoot } from "../inspect/live.js";
import {
  DEFAULT_INSPECT_PORT,
  type InspectServer,
  runPageUrl,
  startInspectServer,
} from "../inspect/server.js";
import { openSkyRelay, type RelayOpener } from "../inspect/stately-relay.js";
import { createRunInspector, inspectorFor } from "../inspect/stream.js";
import type { Host } from "../runtime/host.js";
import type { RunInspection } from "../runtime/launch.js";
import { servedStoreOf } from "./inspected-store.js";
import type { CliIo } from "./io.js";

/** A run's link to an inspect server: its inspection stream, and the page as an interactor. */
export interface Inspection {
  inspect: RunInspection;
  /**
   * The host with the page added to those who answer grant requests, unless `headless`: then
   * nobody answers live, the host's `--on-grant` policy applies at once (deny, or suspend — and
   * the page's Approve/Deny resumes the suspended run), and the run never waits for a page.
   */
  withPage(host: Host, headless: boolean): Host;
  /** Prints the run's page on the inspect server: `inspect: http://127.0.0.1:<port>/runs/<runId>`. */
  announce(runId: string): void;
  /** Once the run ended: the page has its final state, then the stream and the server close. */
  finish(runId: string): Promise<void>;
}

export const INSPECT_HELP = `stream the run to the visualizer on this port (default ${DEFAULT_INSPECT_PORT}), starting it when none listens there`;

export const STATELY_HELP =
  "also relay the run's sanitized stream to the hosted Stately inspector (third-party, online only; see README)";

/** `--inspect [port]` and `--stately` of run and resume: nothing without either flag. */
export async function inspectionFor(
  flag: string | true | undefined,
  storeFlag: string | undefined,
  io: CliIo,
  stately = false,
  openRelay: RelayOpener = openSkyRelay,
): Promise<Inspection | undefined> {
  let local: Inspection | undefined;
  if (flag !== undefined) {
    const port = portOf(flag === true ? String(DEFAULT_INSPECT_PORT) : flag);
    if (!port.ok) throw port.error;
    local = await attachInspection(port.value, storeFlag, io);
  }
  return stately ? withStately(local, io, openRelay) : local;
}

/**
 * The run's inspection with the hosted relay added, which gets the sanitized stream only: it
 * never fails, delays or ends the run.
 */
function withStately(local: Inspection | undefined, io: CliIo, openRelay: RelayOpener): Inspection {
  const relay = inspectorFor(
    openRelay({
      opened: (pageUrl) => io.stderr(`stately: ${pageUrl}\n`),
      failed: (reason) =>
        io.stderr(`stagechart: warning: --stately: ${reason}; the run goes on without it\n`),
    }),
  );
  return {
    inspect: {
      next: (event) => {
        local?.inspect.next?.(event);
        relay.inspect.next?.(event);
      },
      // A reply's pieces are content: for the local server only, never the relay.
      ...(local?.inspect.modelDelta && { modelDelta: local.inspect.modelDelta }),
    },
    withPage: (host, headless) => (local ? local.withPage(host, headless) : host),
    announce: (runId) => local?.announce(runId),
    finish: async (runId) => {
      relay.stop();
      await local?.finish(runId);
    },
  };
}

/** A `--port`/`--inspect` value: 0 (any free port) to 65535. */
export function portOf(text: string): Result<number> {
  const port = Number(text);
  if (/^\d+$/.test(text) && port <= 65535) return ok(port);
  return err(
    new StagechartError("Validation/PortInvalid", `${text} is not a port (0 to 65535)`, {
      port: text,
    }),
  );
}

/**
 * Streams a run to the inspect server on `port` at 127.0.0.1, starting one (for the run's store)
 * when none listens there; a server started here lives until the run ended and its pages have
 * the final state.
 */
export async function attachInspection(
  port: number,
  storeFlag: string | undefined,
  io: CliIo,
): Promise<Inspection> {
  const base = `127.0.0.1:${port}`;
  let owned: InspectServer | undefined;
  if (!(await listening(base))) owned = await serveStore(port, storeFlag);
  let streaming = true;
  const stream = createRunInspector(`ws://${base}/ws/inspect`, (reason) => {
    streaming = false;
    io.stderr(`stagechart: warning: --inspect: ${reason}; the run goes on without it\n`);
  });
  const interactor = pageInteractor(`ws://${base}/ws/interactor`);
  return {
    inspect: stream.inspect,
    withPage: (host, headless) =>
      headless ? host : { ...host, interactors: [...host.interactors, interactor] },
    announce: (runId) => io.stderr(`inspect: ${runPageUrl(`http://${base}/`, runId)}\n`),
    finish: async (runId) => {
      // No run started (refused before it), or no stream: there is no final state to wait for.
      if (runId && streaming) await finalStateShown(base, runId);
      stream.stop();
      interactor.close();
      if (owned) {
        await owned.flush(runId);
        await owned.close();
      }
    },
  };
}

/**
 * An inspect server for the run's store on `port`, closing that store with it; undefined when
 * the port was taken meanwhile.
 */
async function serveStore(
  port: number,
  storeFlag: string | undefined,
): Promise<InspectServer | undefined> {
  const served = await servedStoreOf(storeFlag);
  if (!served.ok) throw served.error;
  try {
    const server = await startInspectServer({
      ...served.value.store,
      port,
      resumeRuns: true,
    });
    return {
      ...server,
      close: async () => {
        await server.close();
        await served.value.close();
      },
    };
  } catch (error) {
    await served.value.close();
    return takenMeanwhile(error);
  }
}

/**
 * The port is taken after all: a server too busy to answer the health check in time, or one
 * started meanwhile. The run streams to it (and says so once if it is not an inspect server).
 */
function takenMeanwhile(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") return undefined;
  throw error;
}

async function listening(base: string): Promise<boolean> {
  try {
    const reply = await fetch(`http://${base}/api/v1/health`, {
      signal: AbortSignal.timeout(1000),
    });
    return reply.ok;
  } catch {
    return false;
  }
}

/** Waits (3 s at most, a server that does not answer included) until it saw the run's root stop. */
async function finalStateShown(base: string, runId: string): Promise<void> {
  const signal = AbortSignal.timeout(3000);
  while (!signal.aborted) {
    try {
      const reply = await fetch(`http://${base}/api/v1/live`, { signal });
      const roots = (await reply.json()) as LiveRoot[];
      const root = roots.findLast((r) => r.runId === runId);
      if (root && root.status !== "active") return;
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

/**
 * The page as an interactor: a grant request goes to the server, whose pages show it with
 * Approve and Deny, an ask stage's question with a form (the server checks the value); the first
 * answer wins (the terminal may answer first: then it is withdrawn). A server that goes away
 * fails the requests it holds (the call is denied, the question goes unanswered: the run never
 * waits for an answer that cannot come); the next request connects again, once.
 */
function pageInteractor(url: string): Interactor & { close(): void } {
  const waiting = new Map<string, { answer(decision: GrantDecision): void; fail(): void }>();
  const questions = new Map<string, { answer(value: JsonValue): void; fail(): void }>();
  let socket: Promise<WebSocket> | undefined;
  const connect = (): Promise<WebSocket> => {
    socket ??= new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.on("open", () => resolve(ws));
      ws.on("error", reject);
      ws.on("close", () => {
        socket = undefined;
        for (const pending of [...waiting.values(), ...questions.values()]) pending.fail();
      });
      ws.on("message", (data) => {
        const message = JSON.parse(data.toString()) as {
          proposalId?: string;
          decision?: GrantDecision;
          stageExecutionId?: string;
          value?: JsonValue;
        };
        const pending = message.proposalId ? waiting.get(message.proposalId) : undefined;
        if (pending && message.decision) pending.answer(message.decision);
        const question = message.stageExecutionId
          ? questions.get(message.stageExecutionId)
          : undefined;
        if (question && message.value !== undefined) question.answer(message.value);
      });
    });
    return socket;
  };
  return {
    name: "visualizer",
    async requestGrant(request, signal) {
      const ws = await connect();
      return new Promise<GrantDecision>((resolve, reject) => {
        const { proposalId } = request;
        waiting.set(proposalId, {
          answer: (decision) => {
            waiting.delete(proposalId);
            resolve(decision);
          },
          fail: () => {
            waiting.delete(proposalId);
            reject(new Error("the inspect server closed the connection"));
          },
        });
        signal.addEventListener("abort", () => {
          waiting.delete(proposalId);
          ws.send(JSON.stringify({ type: "grant-withdrawn", proposalId }));
          reject(signal.reason);
        });
        ws.send(JSON.stringify({ type: "grant-request", request }));
      });
    },
    async askValue(request, signal) {
      const ws = await connect();
      return new Promise<JsonValue>((resolve, reject) => {
        const { stageExecutionId } = request;
        questions.set(stageExecutionId, {
          answer: (value) => {
            questions.delete(stageExecutionId);
            resolve(value);
          },
          fail: () => {
            questions.delete(stageExecutionId);
            reject(new Error("the inspect server closed the connection"));
          },
        });
        signal.addEventListener("abort", () => {
          questions.delete(stageExecutionId);
          ws.send(JSON.stringify({ type: "ask-withdrawn", stageExecutionId }));
          reject(signal.reason);
        });
        const { problems: _, ...question } = request;
        ws.send(JSON.stringify({ type: "ask-request", request: question }));
      });
    },
    close: () => {
      void socket?.then((ws) => ws.close()).catch(() => {});
    },
  };
}
