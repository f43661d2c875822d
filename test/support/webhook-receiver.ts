import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";

/** A webhook as the receiver got it: its parsed body, and whether its signature checked out. */
export interface ReceivedWebhook {
  body: { type: string; runId: string; status: string; waiting?: Array<Record<string, unknown>> };
  signed: boolean;
}

/**
 * A webhook receiver as a user writes one (the docs' recipe): it checks the HMAC-SHA256 of
 * `<timestamp>.<body>` under the shared secret against `stagechart-signature`. It answers
 * `status` (200 unless told otherwise) and keeps what it got, in order.
 */
export async function webhookReceiver(secret: string, status: () => number = () => 200) {
  const received: ReceivedWebhook[] = [];
  let attempts = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      attempts += 1;
      const raw = Buffer.concat(chunks).toString();
      const timestamp = String(request.headers["stagechart-timestamp"] ?? "");
      const given = String(request.headers["stagechart-signature"] ?? "");
      const expected = `v1=${createHmac("sha256", secret).update(`${timestamp}.${raw}`).digest("hex")}`;
      const signed =
        given.length === expected.length &&
        timingSafeEqual(Buffer.from(given), Buffer.from(expected));
      const answer = status();
      if (answer < 300) received.push({ body: JSON.parse(raw), signed });
      response.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    attempts: () => attempts,
    /** The first webhook of `type` for `runId`, once it came (10 s at most). */
    async next(runId: string, type: string): Promise<ReceivedWebhook> {
      for (let i = 0; i < 500; i++) {
        const found = received.find((r) => r.body.runId === runId && r.body.type === type);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`no ${type} webhook for ${runId}: got ${JSON.stringify(received)}`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
