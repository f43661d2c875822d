import type {
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3Text,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import type { ReplyDelta } from "../events/run-events.js";
import type { Redactor } from "../secrets/redact.js";

/** A whole reply, as `doGenerate` gives it and a cassette keeps it. */
export interface WholeReply {
  content: readonly LanguageModelV3Content[];
  finishReason: LanguageModelV3FinishReason;
  usage: LanguageModelV3Usage;
}

/** How long a piece of a replayed or scripted reply is: short enough that a reply comes in several. */
const PIECE = 16;

const pieces = (text: string): string[] => {
  const out: string[] = [];
  for (let at = 0; at < text.length; at += PIECE) out.push(text.slice(at, at + PIECE));
  return out.length > 0 ? out : [""];
};

/**
 * A whole reply as the stream a provider would send: each text in pieces, each tool call's
 * arguments in pieces before the call itself, then the finish with its usage. The scripted and
 * replaying models stream so, so a run on them shows what a run on a hosted model shows.
 */
export function streamOf({
  content,
  finishReason,
  usage,
}: WholeReply): ReadableStream<LanguageModelV3StreamPart> {
  const parts: LanguageModelV3StreamPart[] = [{ type: "stream-start", warnings: [] }];
  content.forEach((part, i) => {
    if (part.type === "text") {
      const id = `text-${i}`;
      parts.push({ type: "text-start", id });
      for (const delta of pieces(part.text)) parts.push({ type: "text-delta", id, delta });
      parts.push({ type: "text-end", id });
    } else if (part.type === "tool-call") {
      const id = part.toolCallId;
      parts.push({ type: "tool-input-start", id, toolName: part.toolName });
      for (const delta of pieces(part.input)) parts.push({ type: "tool-input-delta", id, delta });
      parts.push({ type: "tool-input-end", id }, part);
    } else if (part.type === "reasoning") {
      const id = `reasoning-${i}`;
      parts.push({ type: "reasoning-start", id });
      for (const delta of pieces(part.text)) parts.push({ type: "reasoning-delta", id, delta });
      parts.push({ type: "reasoning-end", id });
    } else {
      parts.push(part as LanguageModelV3StreamPart);
    }
  });
  parts.push({ type: "finish", finishReason, usage });
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

/**
 * A streamed reply read to its end, as the whole result `doGenerate` would have given (its
 * content in order, finish reason and usage), each piece told to `onDelta` on the way. A stream
 * that reports an error, or ends before its finish, fails as the call would have.
 */
export async function readReply(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  onDelta: ((delta: ReplyDelta) => void) | undefined,
  redact: Redactor,
): Promise<LanguageModelV3GenerateResult> {
  const content: LanguageModelV3Content[] = [];
  const texts = new Map<string, { part: LanguageModelV3Text; held?: HeldText }>();
  const inputs = new Map<string, HeldText>();
  let finish: Extract<LanguageModelV3StreamPart, { type: "finish" }> | undefined;
  /** The server said what it answers (an id, a model): a reply began, if nothing else came. */
  let answered = false;
  const reader = stream.getReader();
  // Read to its end, the stream is done with: only one left part-way is cancelled.
  let ended = false;
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      switch (part.type) {
        case "text-start": {
          const text: LanguageModelV3Text = { type: "text", text: "" };
          content.push(text);
          texts.set(part.id, {
            part: text,
            ...(onDelta && {
              held: heldText(redact, (piece) => onDelta({ kind: "text", text: piece })),
            }),
          });
          break;
        }
        case "text-delta": {
          const text = texts.get(part.id);
          if (!text) break;
          text.part.text += part.delta;
          text.held?.push(part.delta);
          break;
        }
        case "text-end":
          texts.get(part.id)?.held?.end();
          break;
        case "tool-input-start":
          if (onDelta)
            inputs.set(
              part.id,
              heldText(redact, (input) =>
                onDelta({ kind: "tool-call", toolCallId: part.id, tool: part.toolName, input }),
              ),
            );
          break;
        case "tool-input-delta":
          inputs.get(part.id)?.push(part.delta);
          break;
        case "tool-input-end":
          inputs.get(part.id)?.end();
          break;
        case "tool-call":
          content.push(part);
          break;
        case "finish":
          finish = part;
          break;
        case "error":
          throw part.error;
        case "response-metadata":
          answered = true;
          break;
        default:
        // Reasoning, sources, metadata and raw chunks are not part of what a turn keeps.
      }
    }
  } finally {
    if (!ended) reader.cancel().catch(() => {});
  }
  if (!finish) throw new Error("the model's reply stream ended before it finished");
  // A body of no event the client knows (an HTML error page sent with a 200, say) still ends
  // with a finish from the client: it is a garbled reply, not an empty one.
  if (content.length === 0 && !answered)
    throw new Error(
      "the model's reply stream held no reply: nothing in it was an event the client reads",
    );
  for (const { held } of texts.values()) held?.end();
  const { finishReason, usage, providerMetadata } = finish;
  return {
    content,
    finishReason,
    usage,
    warnings: [],
    ...(providerMetadata && { providerMetadata }),
  };
}

interface HeldText {
  push(piece: string): void;
  end(): void;
}

/** Past this many characters without a space, a piece is told all but its last `KEY_TAIL`. */
const MOST_HELD = 4096;
/** Longer than any key: what stays held of a long run of characters without a space. */
const KEY_TAIL = 512;

/**
 * Pieces of a text told on as they come, with every key `redact` knows removed. A key can be
 * split over two pieces, so what follows the last whitespace is held until more comes (keys hold
 * no whitespace): a key is never told in parts, and the pieces told still add up to the text.
 */
function heldText(redact: Redactor, tell: (piece: string) => void): HeldText {
  let held = "";
  let ended = false;
  return {
    push(piece) {
      held += piece;
      let cut = Math.max(held.lastIndexOf(" "), held.lastIndexOf("\n"), held.lastIndexOf("\t")) + 1;
      if (cut === 0 && held.length > MOST_HELD) cut = held.length - KEY_TAIL;
      if (cut === 0) return;
      tell(redact(held.slice(0, cut)));
      held = held.slice(cut);
    },
    end() {
      if (ended) return;
      ended = true;
      if (held) tell(redact(held));
      held = "";
    },
  };
}
