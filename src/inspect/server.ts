import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { extname, join } from "node:path";
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { type WebSocket, WebSocketServer } from "ws";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { VISUALIZER_ASSETS } from "../paths.js";
import type { RunHandle } from "../runtime/launch.js";
import {
  createRunControl,
  type PreparedRun,
  type RunControl,
  runControlOver,
} from "../runtime/run-control.js";
import type { RunRecord } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import { prepareStoredRun } from "../runtime/stored-host.js";
import type { ApiContext } from "./api-context.js";
import { API_PREFIX, type ApiExtension, type Route } from "./api-route.js";
import { answerApi, apiRoutes } from "./api-router.js";
import { forkerOver } from "./fork-route.js";
import {
  decodePart,
  forbidden,
  hostAllowed,
  isLoopback,
  originAllowed,
  parse,
  readText,
  sendJson,
  tokenAllowed,
  unauthorized,
} from "./http-requests.js";
import { type LiveNews, LiveRegistry } from "./live.js";
import { MODEL_DELTA_MESSAGE, modelDeltaOf } from "./live-replies.js";
import type { RunChangeListener } from "./run-changes.js";
import { givenStore, sqliteFileSource } from "./store-source.js";
import { StoreWatch } from "./store-watch.js";
import { createRunInspector } from "./stream.js";

/** The run store: a SQLite file, which may not exist yet (the server waits for it), or a store
 * already open (a PostgreSQL store), which the server reads and leaves its giver to close. */
export type InspectedStore = { storePath: string } | { store: RunStore };

export type InspectServerOptions = InspectedStore & {
  host?: string;
  port?: number;
  /** Required when `host` is not loopback: every request must carry it. */
  token?: string;
  /**
   * The page's answers to a suspended run (a grant, an ask stage, a control event) resume it in
   * this process with the settings stored with it (`prepareStoredRun`), streaming to the page.
   * Off: the page acts only on runs a live process owns.
   */
  resumeRuns?: boolean;
  /** How often the store is read for new runs and events (ms). */
  pollMs?: number;
  /**
   * Told of the runs that changed, after each look at the store that found some. Given this, the
   * first look is taken before the server listens: what it finds is the baseline (`first`).
   */
  onRunsChanged?: RunChangeListener;
  /** The built page's folder (default: the package's `dist/visualizer`). */
  assets?: string;
  /** Routes and health facts added to the API (`stagechart serve`'s starts), behind the same checks. */
  api?: ApiExtension;
  /** Told of each run the server resumes or forks in this process (the page's answers). */
  onResumed?(handle: RunHandle): void;
};

export interface InspectServer {
  /** The page's address, with the token when there is one. */
  url: string;
  /** Where a run's live stream goes (`createRunInspector(streamUrl)`), with the token if any. */
  streamUrl: string;
  port: number;
  live: LiveRegistry;
  /**
   * Pushes a run's last events to the pages watching it, then waits (3 s at most) until each
   * says it shows them, so a server that stops after its run does not leave a page behind.
   */
  flush(runId: string): Promise<void>;
  /** A look at the store that starts after this call: the pages and `onRunsChanged` told of it. */
  lookAtStore(): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_INSPECT_PORT = 4477;

/**
 * The visualizer's server: the page, the API (`/api/v1`, the one the page uses) over the store, a WebSocket that accepts
 * `@statelyai/inspect` streams from any XState app, one for pages (live news), and one for
 * live runs' grant requests. Loopback only, unless given a token.
 */
export async function startInspectServer(options: InspectServerOptions): Promise<InspectServer> {
  const host = options.host ?? "127.0.0.1";
  if (!isLoopback(host) && !options.token)
    throw new StagechartError(
      "Validation/InspectTokenMissing",
      `serving on ${host} (not loopback) needs an access token`,
      { host },
    );
  const source =
    "store" in options ? givenStore(options.store) : sqliteFileSource(options.storePath);
  const pages = new Set<WebSocket>();
  const broadcast = (message: unknown): void => {
    if (pages.size === 0) return;
    const text = JSON.stringify(message);
    for (const page of pages) page.send(text);
  };
  const live = new LiveRegistry(
    (news: LiveNews) => broadcast(news),
    (runId, news) => {
      const text = JSON.stringify(news);
      for (const page of watch.pagesWatching(runId)) page.send(text);
    },
  );
  const watch = new StoreWatch(source.current, broadcast, options.onRunsChanged);
  const resumed = new Set<RunHandle>();
  let streamUrl = "";
  const prepare = async (run: RunRecord): Promise<Result<PreparedRun>> => {
    const prepared = await prepareStoredRun(run);
    if (!prepared.ok) return prepared;
    const stream = createRunInspector(streamUrl);
    const close = async () => {
      await prepared.value.close?.();
      stream.stop();
    };
    return ok({ ...prepared.value, inspect: stream.inspect, close });
  };
  /** A run this server started or resumed, kept until it stops (the server stops it as it closes). */
  const keep = (handle: RunHandle) => {
    options.onResumed?.(handle);
    resumed.add(handle);
    void handle.result.catch(() => undefined).finally(() => resumed.delete(handle));
  };
  const routes = apiRoutes(options.api?.routes);
  const context: ApiContext = {
    store: source.current,
    live,
    ...(options.api?.facts && { facts: options.api.facts }),
    resumesRuns: options.resumeRuns === true,
    ...(options.resumeRuns && {
      fork: async (sourceRunId, fork) => {
        const store = await source.current();
        if (!store)
          return err(
            new StagechartError(
              "Session/RunNotFound",
              `no run ${sourceRunId}: there is no store yet`,
              {
                runId: sourceRunId,
              },
            ),
          );
        return forkerOver(store, prepare, keep)(sourceRunId, fork);
      },
    }),
    control: async (by = "visualizer") => {
      const store = await source.current();
      if (!store) return undefined;
      return keptResumed(
        createRunControl({ store, by, ...(options.resumeRuns && { prepare }) }),
        keep,
      );
    },
  };
  const allowed = (request: IncomingMessage): boolean =>
    hostAllowed(request, host) && originAllowed(request) && tokenAllowed(request, options.token);

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    if (path.startsWith("/api/") && !tokenAllowed(request, options.token))
      return sendJson(response, 401, unauthorized(), { "www-authenticate": "Bearer" });
    if (!allowed(request)) return sendJson(response, 403, forbidden());
    void serve(request, response, context, routes, options);
  });
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
  server.on("upgrade", (request, socket, head) => {
    if (!allowed(request)) {
      socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    sockets.handleUpgrade(request, socket, head, (ws) => {
      const path = new URL(request.url ?? "/", "http://x").pathname;
      if (path === "/ws/page") acceptPage(ws, pages, watch, live);
      else if (path === "/ws/interactor") acceptInteractor(ws, live);
      else acceptInspection(ws, live);
    });
  });
  // A listener's baseline is the store before any request to the server could change it.
  if (options.onRunsChanged) await watch.poll();
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? DEFAULT_INSPECT_PORT, host, () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
  const timer = setInterval(() => void watch.poll(), options.pollMs ?? 200);
  timer.unref();
  const shownHost = host.includes(":") ? `[${host}]` : host;
  streamUrl = `ws://${shownHost}:${port}/ws/inspect${options.token ? `?token=${options.token}` : ""}`;
  return {
    url: `http://${shownHost}:${port}/${options.token ? `?token=${options.token}` : ""}`,
    streamUrl,
    port,
    live,
    flush: async (runId) => {
      await watch.pollAfresh();
      await drained(pages);
      // The run's log is complete by now: its last seq is read once, not at every wait.
      const last = await watch.lastSeq(runId).catch(() => undefined);
      if (last !== undefined) await shownEverywhere(() => watch.allShownUpTo(runId, last));
    },
    lookAtStore: () => watch.pollAfresh(),
    close: async () => {
      clearInterval(timer);
      // A run the page resumed stops where it is (it is stored: it resumes later).
      for (const handle of resumed) handle.stop();
      for (const ws of sockets.clients) ws.terminate();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A connection half-way through a request (or an upgrade) would hold close() for minutes.
      server.closeAllConnections();
      await closed;
      await watch.idle();
      await source.close();
    },
  };
}

/** The page of one run on the server at `serverUrl` (its root page, with its token if any). */
export const runPageUrl = (serverUrl: string, runId: string): string =>
  serverUrl.replace(/\/(\?|$)/, `/runs/${encodeURIComponent(runId)}$1`);

/** A fresh access token for a server reachable from other hosts. */
export const newToken = (): string => randomBytes(18).toString("base64url");

async function serve(
  request: IncomingMessage,
  response: ServerResponse,
  context: ApiContext,
  routes: readonly Route[],
  options: InspectServerOptions,
): Promise<void> {
  const { token, assets = VISUALIZER_ASSETS } = options;
  const url = new URL(request.url ?? "/", "http://x");
  if (url.pathname.startsWith(`${API_PREFIX}/`)) {
    const reply = await answerApi(context, routes, {
      method: request.method ?? "GET",
      parts: url.pathname
        .slice(API_PREFIX.length + 1)
        .split("/")
        .map(decodePart),
      query: url.searchParams,
      headers: request.headers,
      text: ["POST", "PUT", "PATCH"].includes(request.method ?? "") ? await readText(request) : "",
    });
    return sendJson(response, reply.status, reply.body, reply.headers);
  }
  if (url.pathname.startsWith("/api/"))
    return sendJson(response, 404, {
      error: new StagechartError(
        "Validation/RouteNotFound",
        `no route ${url.pathname}: the API is at ${API_PREFIX} (its description: ${API_PREFIX}/openapi.json)`,
      ).toModelView(),
    });
  const asset = ASSETS[url.pathname] ?? (isPagePath(url.pathname) ? "index.html" : undefined);
  const file = asset && join(assets, asset);
  if (!file || !existsSync(file))
    return sendJson(response, 404, {
      error: new StagechartError(
        file ? "ExtensionHost/VisualizerNotBuilt" : "Validation/RouteNotFound",
        file ? "the visualizer's page is not built: run npm run build" : `no page ${url.pathname}`,
      ).toModelView(),
    });
  response.writeHead(200, {
    "content-type": TYPES[extname(file)] ?? "application/octet-stream",
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "cache-control": "no-store",
    ...(token && { "set-cookie": `stagechart_token=${token}; HttpOnly; SameSite=Strict; Path=/` }),
  });
  response.end(readFileSync(file));
}

/**
 * The page may talk to this server only: nothing is loaded from anywhere else, no eval, no inline
 * script or style. Its WebSockets go to its own host and port, which 'self' covers (CSP 3).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'none'",
  "connect-src 'self'",
  "img-src 'self'",
  "style-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const ASSETS: Record<string, string> = {
  "/app.js": "app.js",
  "/app.css": "app.css",
  "/favicon.svg": "favicon.svg",
};
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};
const isPagePath = (path: string): boolean =>
  path === "/" ||
  /^\/runs\/[^/]+$/.test(path) ||
  /^\/machines\/[^/]+$/.test(path) ||
  /^\/compare\/[^/]+\/[^/]+$/.test(path);

function acceptPage(ws: WebSocket, pages: Set<WebSocket>, watch: StoreWatch, live: LiveRegistry) {
  pages.add(ws);
  ws.on("close", () => {
    pages.delete(ws);
    watch.unwatchAll(ws);
  });
  ws.on("message", (data) => {
    const message = parse(data.toString()) as
      | { type?: string; runId?: string; seq?: unknown; after?: unknown }
      | undefined;
    if (message?.type === "shown" && typeof message.runId === "string")
      watch.shown(ws, message.runId, Number(message.seq) || 0);
    if (message?.type === "watch" && typeof message.runId === "string") {
      const { runId } = message;
      const after = Number.isSafeInteger(message.after) ? (message.after as number) : undefined;
      void watch
        .watch(ws, runId, after)
        .catch(() => {})
        .then(() => greetWatcher(ws, runId, live));
    }
  });
  ws.send(JSON.stringify({ type: "hello", live: live.list() }));
}

/**
 * What a page that begins watching a run is told at once: its live root, grants, asks, and the
 * replies streaming now as far as they came (the pieces after them follow as they come).
 */
function greetWatcher(ws: WebSocket, runId: string, live: LiveRegistry): void {
  const root = live.rootOfRun(runId);
  if (root) ws.send(JSON.stringify({ type: "live", root }));
  ws.send(JSON.stringify({ type: "grants", runId, grants: live.pendingOf(runId) }));
  ws.send(JSON.stringify({ type: "asks", runId, asks: live.asks.pendingOf(runId) }));
  ws.send(JSON.stringify({ type: "replies", runId, replies: live.replies.of(runId) }));
}

/** A live run's grant requests and ask stages' questions, answered from a page. */
function acceptInteractor(ws: WebSocket, live: LiveRegistry) {
  const asked = new Set<string>();
  const questions = new Set<string>();
  ws.on("message", (data) => {
    const message = parse(data.toString()) as
      | { type: "grant-request"; request: Parameters<LiveRegistry["ask"]>[0] }
      | { type: "grant-withdrawn"; proposalId: string }
      | { type: "ask-request"; request: Parameters<LiveRegistry["asks"]["ask"]>[0] }
      | { type: "ask-withdrawn"; stageExecutionId: string }
      | undefined;
    if (message?.type === "grant-request") {
      asked.add(message.request.proposalId);
      live.ask(message.request, (decision) =>
        ws.send(
          JSON.stringify({
            type: "grant-answer",
            proposalId: message.request.proposalId,
            decision,
          }),
        ),
      );
    } else if (message?.type === "grant-withdrawn") live.withdraw(message.proposalId);
    else if (message?.type === "ask-request") {
      const { stageExecutionId } = message.request;
      questions.add(stageExecutionId);
      live.asks.ask(message.request, (value) =>
        ws.send(JSON.stringify({ type: "ask-answer", stageExecutionId, value })),
      );
    } else if (message?.type === "ask-withdrawn") live.asks.withdraw(message.stageExecutionId);
  });
  ws.on("close", () => {
    for (const proposalId of asked) live.withdraw(proposalId);
    for (const stageExecutionId of questions) live.asks.withdraw(stageExecutionId);
  });
}

let streams = 0;

/**
 * Any XState app's `createWebSocketInspector` stream (a run's carries the pieces of its replies
 * too, in messages of stagechart's own). Every actor system numbers its actors from
 * `x:0`, so each stream's ids are prefixed with the stream's own number: two runs never merge.
 * Once the stream closes, its machines' live view ends (every message sent before the close has
 * been received by then).
 */
function acceptInspection(ws: WebSocket, live: LiveRegistry) {
  const stream = `${++streams}:`;
  const own = (id: unknown) => (typeof id === "string" ? `${stream}${id}` : id);
  const roots = new Set<string>();
  /** The stage executions whose replies came on this stream: they end with it. */
  const replying = new Set<string>();
  ws.on("close", () => {
    live.endReplies(replying);
    live.end(roots);
  });
  ws.on("message", (data) => {
    const text = data.toString();
    const message = parse(text) as StatelyInspectionEvent | undefined;
    if ((message?.type as string) === MODEL_DELTA_MESSAGE) {
      const delta = modelDeltaOf(message);
      if (delta) {
        replying.add(delta.stageExecutionId);
        live.receiveDelta(delta);
      }
      return;
    }
    if (message?.type === "@xstate.actor" && typeof message.sessionId === "string")
      roots.add(`${stream}${message.rootId ?? message.sessionId}`);
    if (message && typeof message.type === "string" && typeof message.sessionId === "string")
      live.receive(
        {
          ...message,
          sessionId: `${stream}${message.sessionId}`,
          rootId: own(message.rootId),
          ...(message.type === "@xstate.actor" && { parentId: own(message.parentId) }),
        } as StatelyInspectionEvent,
        Buffer.byteLength(text),
      );
  });
}

/**
 * Waits until the pages watching a run show its end: each says so once it has fetched what the
 * last news changed (a page closed meanwhile no longer counts). 3 s at most: a page that never
 * answers (an old tab, a script) does not hold the run's process.
 */
async function shownEverywhere(shown: () => boolean): Promise<void> {
  for (let i = 0; i < 150 && !shown(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Waits until everything sent to the pages has left the process. */
async function drained(pages: Set<WebSocket>): Promise<void> {
  for (let i = 0; i < 100 && [...pages].some((p) => p.bufferedAmount > 0); i++)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

/** `control`, each run it resumes handed to `keep` (the server stops them as it closes). */
function keptResumed(control: RunControl, keep: (handle: RunHandle) => void): RunControl {
  return runControlOver(async (runId, request) => {
    const outcome = await control.act(runId, request);
    if (outcome.ok && outcome.value.outcome === "resumed") keep(outcome.value.handle);
    return outcome;
  });
}
