import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Command, Option } from "commander";
import { parse } from "yaml";
import { err, ok, type Result, StagechartError, toStagechartError } from "../../errors.js";
import { isLoopback } from "../../inspect/http-requests.js";
import { newToken } from "../../inspect/server.js";
import { loadPriceFile } from "../../models/prices.js";
import { SECURITY_MODES, type SecurityMode } from "../../runtime/security-mode.js";
import { startServeServer } from "../../serve/server.js";
import { WEBHOOK_SECRET_VARIABLE, webhookOptionsOf } from "../../serve/webhooks.js";
import { isPostgresUrl } from "../../store/open-store.js";
import { openAnyStore } from "../any-store.js";
import { refuse } from "../drive.js";
import { addSandboxOptions, type SandboxFlags } from "../host-options.js";
import { portOf } from "../inspection.js";
import { type CliIo, EXIT } from "../io.js";
import { collect, maxParallelOption, pricesOption } from "../options.js";
import { STORE_HELP, storeSpecOf } from "../store.js";

interface ServeFlags extends SandboxFlags {
  port: string;
  host: string;
  store?: string;
  token?: string;
  pipelines?: string;
  root?: string;
  mode: SecurityMode;
  webhook: string[];
  webhookConfig?: string;
  maxParallel?: number;
  prices?: string;
}

export const DEFAULT_SERVE_PORT = 4478;

/** `serve`: the HTTP API (`/api/v1`) and the page, until SIGINT or SIGTERM. */
export function registerServe(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const command = program
    .command("serve")
    .description(
      "an HTTP API to start, list, show, answer and control runs (/api/v1, described at /api/v1/openapi.json), with webhooks; the page too",
    )
    .option("--port <port>", "the port to serve on", String(DEFAULT_SERVE_PORT))
    .option(
      "--host <host>",
      "the address to serve on (not loopback: needs an access token)",
      "127.0.0.1",
    )
    .option("--store <store>", `${STORE_HELP}; on PostgreSQL runs are only queued, for workers`)
    .option(
      "--token <token>",
      "the access token (Authorization: Bearer <token>) every request needs; a non-loopback host requires one (default: generated)",
    )
    .option(
      "--pipelines <dir>",
      "the directory whose pipelines a start may name (default: the working directory)",
    )
    .option(
      "--root <dir>",
      "the directory the runs' tools work in (default: the working directory)",
    )
    .addOption(
      new Option("--mode <mode>", "security mode for calls no stage envelope covers")
        .choices(SECURITY_MODES)
        .default("ask"),
    )
    .option(
      "--webhook <url>",
      `POST each run's end and waits to this URL, signed with the secret in $${WEBHOOK_SECRET_VARIABLE}; repeatable`,
      collect,
      [],
    )
    .option(
      "--webhook-config <file>",
      "webhooks from a file (JSON or YAML): {urls: [...], secretEnv?: <variable holding the secret>}",
    )
    .addOption(maxParallelOption())
    .addOption(pricesOption());
  addSandboxOptions(command).action(async (flags: ServeFlags) => setExit(await serve(flags, io)));
}

async function serve(flags: ServeFlags, io: CliIo): Promise<number> {
  const port = portOf(flags.port);
  if (!port.ok) return refuse(io, false, port.error);
  const config =
    flags.webhookConfig === undefined ? ok(undefined) : readConfig(flags.webhookConfig);
  if (!config.ok) return refuse(io, false, config.error);
  const webhooks = webhookOptionsOf(flags.webhook, config.value, process.env);
  if (!webhooks.ok) return refuse(io, false, webhooks.error);
  const prices = flags.prices === undefined ? undefined : resolve(flags.prices);
  // Checked once here: a bad price file would otherwise refuse every start, one at a time.
  const priced = prices === undefined ? ok(undefined) : loadPriceFile(prices);
  if (!priced.ok) return refuse(io, false, priced.error);
  const token = isLoopback(flags.host) ? flags.token : (flags.token ?? newToken());
  const store = await openAnyStore(flags.store);
  if (!store.ok) return refuse(io, false, store.error);
  const queued = isPostgresUrl(storeSpecOf(flags.store));
  let server: Awaited<ReturnType<typeof startServeServer>>;
  try {
    server = await startServeServer({
      store: store.value,
      runs: queued ? "queued" : "in-process",
      pipelinesDir: resolve(flags.pipelines ?? process.cwd()),
      settings: {
        root: resolve(flags.root ?? process.cwd()),
        mode: flags.mode,
        sandbox: flags.sandbox ?? "auto",
        ...(flags.allowNetwork && { network: true }),
        ...(flags.unconfinedBash && { unconfinedBash: true }),
        ...(flags.maxParallel !== undefined && { maxParallel: flags.maxParallel }),
        ...(prices !== undefined && { prices }),
      },
      host: flags.host,
      port: port.value,
      ...(token && { token }),
      ...(webhooks.value && { webhooks: webhooks.value }),
      onWebhookFailed: ({ error }) =>
        io.stderr(`stagechart serve: warning: ${error.code}: ${error.message}\n`),
    });
  } catch (error) {
    await store.value.close();
    return refuse(io, false, toStagechartError(error, "ExtensionHost/InspectFailed"));
  }
  const runs = queued ? "runs are queued for `stagechart worker`" : "runs run in this process";
  io.stdout(`stagechart serve: ${server.apiUrl}  (${runs}; Ctrl-C to stop)\n`);
  if (token) io.stdout(`access token: Authorization: Bearer ${token}\n`);
  await new Promise<void>((done) => {
    process.once("SIGINT", () => done());
    process.once("SIGTERM", () => done());
  });
  await server.close();
  await store.value.close();
  return EXIT.done;
}

function readConfig(file: string): Result<unknown> {
  try {
    return ok(parse(readFileSync(file, "utf8")));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return err(
      new StagechartError(
        "Validation/WebhookConfigInvalid",
        `the webhook config ${file} cannot be read: ${message}`,
        { file },
      ),
    );
  }
}
