import { resolve } from "node:path";
import { API_PREFIX } from "../inspect/api-route.js";
import { type InspectServer, startInspectServer } from "../inspect/server.js";
import type { RunHandle } from "../runtime/launch.js";
import type { RunStore } from "../runtime/store-port.js";
import { startRoutes } from "./routes.js";
import { RunNotices } from "./run-notices.js";
import type { RunsMode, ServedSettings } from "./run-starter.js";
import { type WebhookFailure, type WebhookOptions, WebhookSender } from "./webhooks.js";

export interface ServeOptions {
  /** The run store, open: the server reads and writes it, and leaves its giver to close it. */
  store: RunStore;
  /** Run started runs here (a SQLite store), or only queue them for workers (PostgreSQL). */
  runs: RunsMode;
  /** The directory whose pipelines a start may name. */
  pipelinesDir: string;
  /** What the runs it starts run with: root, security mode, sandbox. */
  settings: ServedSettings;
  host?: string;
  port?: number;
  /** Required off loopback: every request must carry it (`Authorization: Bearer <token>`). */
  token?: string;
  webhooks?: WebhookOptions;
  /** How often the store is read for changed runs: the page's news, the webhooks (ms, default 250). */
  pollMs?: number;
  /** Told of a webhook given up after every retry (the run is unaffected). */
  onWebhookFailed?(failure: WebhookFailure): void;
  /** The built page's folder (default: the package's `dist/visualizer`). */
  assets?: string;
}

export interface ServeServer {
  /** The server's address, with the token when there is one (the page is served at its root). */
  url: string;
  /** The API's base address (`…/api/v1`). */
  apiUrl: string;
  port: number;
  /** Resolves once the runs' news so far is read and its webhooks delivered or given up. */
  settled(): Promise<void>;
  /** Stops the runs started or resumed here where they are (stored: they resume later), then the server. */
  close(): Promise<void>;
}

/**
 * `stagechart serve`: the inspect server (the page, the API at `/api/v1`, the live sockets) with
 * the API's starts added, and webhooks for the store's runs that end or come to
 * wait. Runs start headless: what they wait for, they wait for suspended, until answered over the
 * API (or the page), which resumes them through `RunControl` in this process.
 */
export async function startServeServer(options: ServeOptions): Promise<ServeServer> {
  const running = new Set<RunHandle>();
  const keep = (handle: RunHandle) => {
    running.add(handle);
    void handle.result.catch(() => undefined).finally(() => running.delete(handle));
  };
  const sender =
    options.webhooks &&
    new WebhookSender(options.webhooks, (failure) => options.onWebhookFailed?.(failure));
  const notices = sender && new RunNotices((event) => sender.send(event));
  const inspect: InspectServer = await startInspectServer({
    store: options.store,
    ...(options.host !== undefined && { host: options.host }),
    port: options.port ?? 0,
    pollMs: options.pollMs ?? 250,
    ...(notices && { onRunsChanged: notices.changed }),
    ...(options.token !== undefined && { token: options.token }),
    ...(options.assets !== undefined && { assets: options.assets }),
    resumeRuns: true,
    api: {
      routes: startRoutes({
        store: async () => options.store,
        pipelinesDir: resolve(options.pipelinesDir),
        settings: options.settings,
        runs: options.runs,
        started: keep,
      }),
      facts: { runs: options.runs },
    },
  });
  const base = inspect.url.replace(/\/(\?.*)?$/, "");
  return {
    url: inspect.url,
    apiUrl: `${base}${API_PREFIX}`,
    port: inspect.port,
    settled: async () => {
      await inspect.lookAtStore();
      await sender?.settled();
    },
    close: async () => {
      for (const handle of running) handle.stop();
      await Promise.all([...running].map((handle) => handle.result.catch(() => undefined)));
      // The server's last look is done once it is closed: no news is read after.
      await inspect.close();
      await sender?.close();
    },
  };
}
