import { err, ok, type Result, toStagechartError } from "../errors.js";
import type { InspectServer, InspectServerOptions } from "./server.js";

export type { LiveRoot } from "./live.js";
export type { InspectedStore, InspectServer, InspectServerOptions } from "./server.js";
export { createRunInspector, type RunInspector } from "./stream.js";

/**
 * `stagechart inspect`'s server, for an app of its own: the page and its API over a store's runs
 * (`{storePath}`, a SQLite file, or `{store}`, an open `RunStore`), and the receiver of live
 * streams — a run's `createRunInspector(server.streamUrl)`, or any XState app's
 * `createWebSocketInspector` — whose roots `server.live.list()` holds (`GET /api/v1/live`). Port
 * 4477 unless given (0: any free port), loopback unless given a host and a token. A server that
 * cannot start is an error value (`Validation/InspectTokenMissing`; the system's error, as
 * `ExtensionHost/InspectFailed`, for a port in use). Loaded on the first call: its chart layout
 * engine is large, and an app that never serves pages does not load it.
 */
export async function startInspectServer(
  options: InspectServerOptions,
): Promise<Result<InspectServer>> {
  try {
    const server = await import("./server.js");
    return ok(await server.startInspectServer(options));
  } catch (error) {
    return err(toStagechartError(error, "ExtensionHost/InspectFailed"));
  }
}
