import { spawn } from "node:child_process";
import type { Command } from "commander";
import { toStagechartError } from "../../errors.js";
import { isLoopback } from "../../inspect/http-requests.js";
import {
  DEFAULT_INSPECT_PORT,
  newToken,
  runPageUrl,
  startInspectServer,
} from "../../inspect/server.js";
import { refuse } from "../drive.js";
import { servedStoreOf } from "../inspected-store.js";
import { portOf } from "../inspection.js";
import { type CliIo, EXIT } from "../io.js";
import { STORE_HELP } from "../store.js";

interface InspectFlags {
  port: string;
  host: string;
  store?: string;
  token?: string;
  open?: boolean;
}

/** `inspect [runId]`: the visualizer, until Ctrl-C. */
export function registerInspect(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
): void {
  program
    .command("inspect")
    .description("the visualizer: live and stored runs in the browser, served from this machine")
    .argument("[runId]", "open this run's page")
    .option("--port <port>", "the port to serve on", String(DEFAULT_INSPECT_PORT))
    .option(
      "--host <host>",
      "the address to serve on (not loopback: needs an access token)",
      "127.0.0.1",
    )
    .option("--store <store>", STORE_HELP)
    .option("--token <token>", "the access token a non-loopback host requires (default: generated)")
    .option("--open", "open the page in the default browser")
    .action(async (runId: string | undefined, flags: InspectFlags) =>
      setExit(await inspect(runId, flags, io)),
    );
}

async function inspect(runId: string | undefined, flags: InspectFlags, io: CliIo): Promise<number> {
  const port = portOf(flags.port);
  if (!port.ok) return refuse(io, false, port.error);
  const token = isLoopback(flags.host) ? flags.token : (flags.token ?? newToken());
  const served = await servedStoreOf(flags.store);
  if (!served.ok) return refuse(io, false, served.error);
  let server: Awaited<ReturnType<typeof startInspectServer>>;
  try {
    server = await startInspectServer({
      ...served.value.store,
      host: flags.host,
      port: port.value,
      ...(token && { token }),
      resumeRuns: true,
    });
  } catch (error) {
    await served.value.close();
    return refuse(io, false, toStagechartError(error, "ExtensionHost/InspectFailed"));
  }
  const page = runId ? runPageUrl(server.url, runId) : server.url;
  io.stdout(`stagechart inspect: ${page}  (Ctrl-C to stop)\n`);
  if (flags.open) openBrowser(page);
  await new Promise<void>((resolve) => process.once("SIGINT", () => resolve()));
  await server.close();
  await served.value.close();
  return EXIT.done;
}

function openBrowser(url: string): void {
  const command =
    process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  spawn(command, [url], { stdio: "ignore", detached: true })
    .on("error", () => {})
    .unref();
}
