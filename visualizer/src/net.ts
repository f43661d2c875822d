/** A refusal from the server: its error code (`Session/RunNotFound`), or the HTTP status text. */
export class ApiError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
  ) {
    super(code ? `${code}: ${message}` : message);
  }
}

const refusal = (reply: Response, body: { error?: { code?: string; message?: string } }) =>
  new ApiError(body?.error?.code, body?.error?.message ?? reply.statusText);

/** The page talks to the server that served it, and to nothing else. */
export async function getJson<T>(path: string): Promise<T> {
  const reply = await fetch(path, { credentials: "same-origin" });
  const body = await reply.json();
  if (!reply.ok) throw refusal(reply, body);
  return body as T;
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const reply = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    // The audit records who acted: this page, not an outside caller of the API.
    headers: { "content-type": "application/json", "x-stagechart-client": "visualizer" },
    body: JSON.stringify(body),
  });
  const answer = await reply.json();
  if (!reply.ok) throw refusal(reply, answer);
  return answer as T;
}

export type News = { type: string; [key: string]: unknown };

/** The page's WebSocket: news from the server, reconnecting when the server comes back. */
export class PageSocket {
  private socket: WebSocket | undefined;
  private readonly listeners = new Set<(news: News) => void>();
  /** The run watched (one at a time), with what tells the last audit seq the page holds of it. */
  private readonly watching = new Map<string, () => number>();

  constructor(private readonly onConnection: (connected: boolean) => void) {
    this.connect();
  }

  /** Calls `listener` with each piece of news; the function returned stops it. */
  listen(listener: (news: News) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** News of a run's events after the last the page holds (asked again on reconnecting). */
  watch(runId: string, lastSeq: () => number): void {
    this.watching.clear();
    this.watching.set(runId, lastSeq);
    this.send({ type: "watch", runId, after: lastSeq() });
  }

  /** Tells the server the page shows the run up to audit event `seq` (it may stop after). */
  shown(runId: string, seq: number): void {
    this.send({ type: "shown", runId, seq });
  }

  private send(message: unknown): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  private connect(): void {
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/page`;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      this.onConnection(true);
      for (const [runId, lastSeq] of this.watching)
        this.send({ type: "watch", runId, after: lastSeq() });
    };
    socket.onmessage = (message) => {
      const news = JSON.parse(String(message.data)) as News;
      for (const listener of this.listeners) listener(news);
    };
    socket.onclose = () => {
      this.onConnection(false);
      setTimeout(() => this.connect(), 1000);
    };
  }
}
