/**
 * Bounds on what one response may make this process hold, so a broken or hostile server ends a
 * turn with an `error` event instead of growing memory without end:
 *
 * - `maxResponseBytes` (default 64 MiB): the body's bytes **after** decompression (`fetch`
 *   inflates gzip/br/deflate before we see them, so ~1 MB of gzip that inflates to 1 GB stops at
 *   the bound). The recorded OpenAI and DeepSeek streams spend ~300 bytes of SSE per chunk, so
 *   64 MiB holds ~220k chunks: more than a 128k-token answer.
 * - `maxContentBlocks` (default 1,024) and `maxToolCalls` (default 256) per turn: a server that
 *   opens block after block in tiny pieces is stopped long before the byte bound.
 *
 * Each bound is checked as the data arrives (bytes per read, blocks after each chunk), so a
 * turn may end up to one read or one chunk past it, never more.
 */
import { failure, type RequestFailure } from "./request-failure.js";
import type { AssistantMessage } from "../../types.js";
import { PiCourseError } from "../../base/errors.js";

/** The bounds a model applies to each response (every field optional; defaults below). */
export interface ResponseLimits {
  /** Bytes of body, after decompression. Default `DEFAULT_LIMITS.maxResponseBytes`. */
  maxResponseBytes?: number;
  /** Content blocks (text, thinking, tool calls) per turn. */
  maxContentBlocks?: number;
  /** Tool calls per turn. */
  maxToolCalls?: number;
}

export const DEFAULT_LIMITS: Readonly<Required<ResponseLimits>> = Object.freeze({
  maxResponseBytes: 64 * 1024 * 1024,
  maxContentBlocks: 1024,
  maxToolCalls: 256,
});

/** The error a bounded body fails with once it has passed `maxResponseBytes`. */
export class ResponseTooLargeError extends PiCourseError {
  /** Stable: `"RESPONSE_TOO_LARGE"`. */
  override readonly code = "RESPONSE_TOO_LARGE";
  constructor(readonly limit: number) {
    super(`the response passed maxResponseBytes (${limit} bytes after decompression); the rest was not read`);
    this.name = "ResponseTooLargeError";
  }
}

/**
 * The body as a stream that fails with `ResponseTooLargeError` once more than `maxBytes` have
 * arrived, and with `signal.reason` as soon as `signal` aborts (even if the underlying body
 * ignores the signal: a `fetch` given by the caller may). Either way the underlying body is
 * cancelled, which closes the connection.
 */
export function boundedBody(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let received = 0;
  let closed = false;
  let fail: (reason: unknown) => void = () => {};
  const onAbort = () => fail(signal.reason);
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        fail = (reason) => {
          if (closed) return;
          closed = true;
          signal.removeEventListener("abort", onAbort);
          controller.error(reason);
          reader.cancel(reason).catch(() => {});
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      },
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          return fail(signal.aborted ? signal.reason : error);
        }
        if (closed) return;
        if (chunk.done) {
          closed = true;
          signal.removeEventListener("abort", onAbort);
          return controller.close();
        }
        received += chunk.value.byteLength;
        if (received > maxBytes) return fail(new ResponseTooLargeError(maxBytes));
        controller.enqueue(chunk.value);
      },
      cancel(reason) {
        closed = true;
        signal.removeEventListener("abort", onAbort);
        return reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}

/** Counts a turn's blocks and tool calls as its message grows; O(1) per new block. */
export class TurnLimits {
  private counted = 0;
  private toolCalls = 0;
  private readonly maxContentBlocks: number;
  private readonly maxToolCalls: number;

  constructor(limits: ResponseLimits = {}) {
    this.maxContentBlocks = limits.maxContentBlocks ?? DEFAULT_LIMITS.maxContentBlocks;
    this.maxToolCalls = limits.maxToolCalls ?? DEFAULT_LIMITS.maxToolCalls;
  }

  /** Call after each chunk: a `limit` failure once the message holds too much, else undefined. */
  check(message: AssistantMessage): RequestFailure | undefined {
    const { content } = message;
    for (; this.counted < content.length; this.counted++) {
      if (content[this.counted]!.type === "toolCall") this.toolCalls++;
    }
    if (this.toolCalls > this.maxToolCalls) {
      return failure("limit", `The response passed maxToolCalls (${this.maxToolCalls} tool calls in one turn).`);
    }
    if (content.length > this.maxContentBlocks) {
      return failure(
        "limit",
        `The response passed maxContentBlocks (${this.maxContentBlocks} content blocks in one turn).`,
      );
    }
    return undefined;
  }
}
