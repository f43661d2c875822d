import { createHmac, randomUUID } from "node:crypto";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { redactUrl } from "../secrets/redact.js";

/** Where the server's webhooks go, and the secret each delivery is signed with. */
export interface WebhookOptions {
  urls: readonly string[];
  /** The HMAC key: held in memory only, never stored, printed or sent. */
  secret: string;
  /** Attempts per delivery, the first included (default 5). */
  attempts?: number;
  /** The wait before the second attempt, doubled before each next one (default 500 ms). */
  backoffMs?: number;
  /** How long one attempt waits for the receiver's answer (default 10 s). */
  timeoutMs?: number;
}

/** What a webhook tells: a run ended, or waits for an answer. */
export interface WebhookEvent {
  type: "run.ended" | "run.waiting";
  runId: string;
  pipelineId: string;
  status: string;
  /** What a waiting run waits for: grant requests and ask stages. */
  waiting?: unknown[];
  error?: unknown;
}

/** The headers a delivery carries: the signature is over `<timestamp>.<body>`. */
export const SIGNATURE_HEADER = "stagechart-signature";
export const TIMESTAMP_HEADER = "stagechart-timestamp";

/** `v1=<hex HMAC-SHA256 of "<timestamp>.<body>" under the secret>`. */
export const signatureOf = (secret: string, timestamp: string, body: string): string =>
  `v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;

/** A delivery that failed every attempt: logged, the run unaffected. */
export interface WebhookFailure {
  /** The receiver's URL without credentials or query string. */
  url: string;
  event: WebhookEvent["type"];
  runId: string;
  attempts: number;
  error: StagechartError;
}

/**
 * Sends each event to every URL, signed, retrying with a doubling backoff; a delivery that fails
 * every attempt is reported to `failed` and given up. Nothing waits for a delivery: a receiver
 * that is down never holds a run. `close` cuts the deliveries still retrying short.
 */
export class WebhookSender {
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly options: WebhookOptions,
    private readonly failed: (failure: WebhookFailure) => void,
  ) {}

  send(event: WebhookEvent): void {
    const body = JSON.stringify({ id: randomUUID(), at: new Date().toISOString(), ...event });
    for (const url of this.options.urls) {
      const delivery = this.deliver(url, event, body).finally(() => this.inFlight.delete(delivery));
      this.inFlight.add(delivery);
    }
  }

  /** Resolves once every delivery under way has ended (delivered, or given up). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.settled();
  }

  private async deliver(url: string, event: WebhookEvent, body: string): Promise<void> {
    const attempts = this.options.attempts ?? 5;
    let wait = this.options.backoffMs ?? 500;
    let last = "";
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (this.stopping.signal.aborted) break;
      const timestamp = String(Math.floor(Date.now() / 1000));
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "stagechart-event": event.type,
            [TIMESTAMP_HEADER]: timestamp,
            [SIGNATURE_HEADER]: signatureOf(this.options.secret, timestamp, body),
          },
          body,
          signal: AbortSignal.any([
            this.stopping.signal,
            AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
          ]),
        });
        await response.body?.cancel();
        if (response.ok) return;
        last = `the receiver answered ${response.status}`;
      } catch (error) {
        last = error instanceof Error ? (error.cause as Error)?.message || error.message : "";
      }
      if (attempt < attempts) await pause(wait, this.stopping.signal);
      wait *= 2;
    }
    const shown = redactUrl(url);
    this.failed({
      url: shown,
      event: event.type,
      runId: event.runId,
      attempts,
      error: new StagechartError(
        "ExtensionHost/WebhookFailed",
        `the ${event.type} webhook of run ${event.runId} to ${shown} was not delivered after ${attempts} attempts: ${last}`,
        { url: shown, runId: event.runId, attempts },
      ),
    });
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** The environment variable the webhook secret is read from, unless the config names another. */
export const WEBHOOK_SECRET_VARIABLE = "STAGECHART_WEBHOOK_SECRET";

/**
 * The webhook URLs given (flags and a config file's `urls`), checked to be http(s), with the
 * secret from the environment (`secretEnv` of the config, else `STAGECHART_WEBHOOK_SECRET`):
 * never from a flag or a file, so it never sits in a command line or a checked-in file. No URL:
 * no webhooks (undefined). URLs and no secret: `Validation/WebhookConfigInvalid`.
 */
export function webhookOptionsOf(
  urls: readonly string[],
  config: unknown,
  env: NodeJS.ProcessEnv,
): Result<WebhookOptions | undefined> {
  const invalid = (message: string) =>
    err(new StagechartError("Validation/WebhookConfigInvalid", message));
  const file = (config ?? {}) as { urls?: unknown; secretEnv?: unknown };
  if (
    typeof config !== "undefined" &&
    (typeof config !== "object" ||
      config === null ||
      (file.urls !== undefined &&
        !(Array.isArray(file.urls) && file.urls.every((u) => typeof u === "string"))) ||
      (file.secretEnv !== undefined && typeof file.secretEnv !== "string"))
  )
    return invalid("the webhook config is {urls: [<http(s) URL>…], secretEnv?: <variable name>}");
  const all = [...urls, ...((file.urls as string[] | undefined) ?? [])];
  const bad = all.find((url) => !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol));
  if (bad !== undefined) return invalid(`${redactUrl(bad)} is not an http or https URL`);
  if (all.length === 0) return ok(undefined);
  const variable = (file.secretEnv as string | undefined) ?? WEBHOOK_SECRET_VARIABLE;
  const secret = env[variable];
  if (!secret)
    return invalid(
      `webhooks are signed: set the secret in ${variable} (it is read from the environment only)`,
    );
  return ok({ urls: all, secret });
}
