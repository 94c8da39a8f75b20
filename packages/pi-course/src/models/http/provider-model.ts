/**
 * What every provider `Model` over HTTP shares: `stream()` that returns at once and never
 * throws, and one turn from request to terminal event.
 *
 * One turn: the body is built (a throw there, e.g. an image a model cannot take, ends the turn
 * with kind `request` before anything is sent), sent by the shared transport
 * (`http-transport.ts`: retries before the first byte, timeouts, redirect policy, size bound),
 * and the answer read as server-sent events (`sse.ts`), a batch of frames per read. Per batch the
 * caller's signal is checked, and the idle watchdog is fed when a frame of the batch carried
 * content (`ProviderTurn.progressMark`: keep-alive frames are not progress); each frame goes to the
 * adapter's `readFrame`, which maps it onto its `ProviderTurn`, and the per-turn bounds
 * (`response-limits.ts`) are checked after it. (Within one batch nothing else runs, so the signal
 * cannot change there.) When the reader has not taken a batch's events yet, the turn waits one turn
 * of the event loop before reading on: a server faster than its reader would otherwise pile the
 * whole answer up in the stream (a 2 MB tool call read from memory: 520,000 events held at once,
 * copied by the collector, 1.6x the time of reading it). A failure
 * before the first byte is a fresh error message (`failedMessage`, no `start`); one after it
 * keeps the partial content. Every message says how many HTTP requests the turn took
 * (`attempts`, and `errorDetails.attempts` on a failure): the turn is made with the accepted
 * stream's `attempts`. The secrets (the API key) are redacted from every error text.
 */
import { setImmediate } from "node:timers/promises";
import { AssistantMessageEventStream } from "../../event-stream.js";
import { openEventStream, type TransportOptions } from "./http-transport.js";
import type { ProviderTurn, TurnMeta } from "./provider-turn.js";
import {
  clip,
  describeCause,
  detailsOf,
  failedMessage,
  failure,
  redact,
  type RequestFailure,
} from "./request-failure.js";
import { isRetryableCode } from "./retry-policy.js";
import { TurnLimits } from "./response-limits.js";
import { readSseBatches, type SseEvent } from "./sse.js";
import type { Context } from "../../types.js";
import type { Model, StreamOptions } from "../../model.js";

/** What reading one frame may come to: go on (`undefined`), stop reading (`"end"`), or fail. */
export type FrameOutcome = undefined | "end" | RequestFailure;

/**
 * What an adapter whose wire sends one JSON value per frame tells `readJsonFrame`: how to parse a
 * frame, how to apply the value to the turn, and the code of an error the value reports.
 */
export interface JsonFrames<Turn, T> {
  /** What the wire calls a frame's value ("chunk", "event"): named in the failure texts. */
  noun: string;
  /** Reads the frame's data; throws when it is not JSON. */
  parse(turn: Turn, data: string): T;
  /** Maps the value onto the turn; returns the provider's error text when the value reports one. */
  apply(turn: Turn, value: T, frame: SseEvent): string | undefined;
  /** The provider's code for that error, if any. */
  codeOf(value: T): string | undefined;
}

/** An error the server reported inside its stream: a `provider` failure, retryable as its code says. */
export function providerError(text: string, code: string | undefined): RequestFailure {
  return failure("provider", `The provider reported an error: ${text}`, {
    ...(code !== undefined && { code }),
    retryable: isRetryableCode(code),
  });
}

/** Who a provider model is: copied to every message it makes. */
export interface ProviderIdentity {
  provider: string;
  model: string;
  /** Never shown in an error. */
  apiKey?: string;
  /** The clock for timestamps. Defaults to `Date.now`. */
  now?: () => number;
}

export abstract class ProviderModel<Turn extends ProviderTurn> implements Model {
  readonly provider: string;
  readonly id: string;
  protected readonly now: () => number;
  /** Redacted from every error text. */
  protected readonly secrets: string[];

  constructor(
    private readonly transport: TransportOptions,
    identity: ProviderIdentity,
  ) {
    this.provider = identity.provider;
    this.id = identity.model;
    this.now = identity.now ?? Date.now;
    this.secrets = identity.apiKey ? [identity.apiKey] : [];
  }

  /** The endpoint of one turn. */
  protected abstract readonly url: string;
  /** The request headers (the key included). */
  protected abstract headers(): Record<string, string>;
  /**
   * The request body for `context` and this call's `options` (its `thinking` level included).
   * May throw: the turn then ends with kind `request`, nothing sent.
   */
  protected abstract body(context: Context, options: StreamOptions): unknown;
  /** A fresh turn translator. */
  protected abstract newTurn(stream: AssistantMessageEventStream, meta: TurnMeta): Turn;
  /** Applies one frame to the turn. Never throws: a frame it cannot read is a `protocol` failure. */
  protected abstract readFrame(turn: Turn, frame: SseEvent): FrameOutcome;

  /**
   * A `readFrame` for a wire of JSON frames: `wire.parse`, then `wire.apply`.
   * Contract: never throws. Data that does not parse is a `protocol` failure ("The server sent a
   * malformed <noun>: <data>"); a throw while applying it is one too ("The server sent a <noun>
   * this adapter cannot read (<cause>): <data>"); an error text from `apply` is a `provider`
   * failure ("The provider reported an error: <text>") with `wire.codeOf(value)`. Every text
   * taken from the frame is redacted and clipped. (With the noun "chunk": "The server sent a
   * malformed chunk: …"; with "event": "The server sent a malformed event: …".)
   */
  protected readJsonFrame<T>(turn: Turn, frame: SseEvent, wire: JsonFrames<Turn, T>): FrameOutcome {
    let value: T;
    try {
      value = wire.parse(turn, frame.data);
    } catch {
      return failure("protocol", `The server sent a malformed ${wire.noun}: ${clip(frame.data, this.secrets)}`);
    }
    let error: string | undefined;
    try {
      error = wire.apply(turn, value, frame);
    } catch (cause) {
      const a = /^[aeiou]/.test(wire.noun) ? "an" : "a";
      return failure(
        "protocol",
        `The server sent ${a} ${wire.noun} this adapter cannot read (${describeCause(cause)}): ${clip(frame.data, this.secrets)}`,
      );
    }
    return error === undefined ? undefined : providerError(clip(error, this.secrets), wire.codeOf(value));
  }

  stream(context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    const stream = new AssistantMessageEventStream();
    this.run(stream, context, options).catch((error: unknown) => {
      // Unreachable by design; still, a bug must end the turn, not hang it.
      this.failEarly(stream, failure("protocol", `Internal error in the adapter: ${describeCause(error)}`));
    });
    return stream;
  }

  private async run(stream: AssistantMessageEventStream, context: Context, options: StreamOptions): Promise<void> {
    const signal = options.signal;
    // This request's retry budget, when the caller set one (a fallback asks for none).
    const retries = options.maxRetries;
    if (retries !== undefined && !(Number.isInteger(retries) && retries >= 0)) {
      const text = `The request could not be built: maxRetries must be a whole number >= 0, got ${retries}`;
      return this.failEarly(stream, failure("request", text, { attempts: 0 }));
    }
    const transport = retries === undefined ? this.transport : { ...this.transport, maxRetries: retries };
    // #region lab 5.5 ProviderModel.run
    let body: string;
    try {
      body = JSON.stringify(this.body(context, options));
    } catch (error) {
      const text = `The request could not be built: ${describeCause(error)}`;
      return this.failEarly(stream, failure("request", text, { attempts: 0 }));
    }
    const request = { url: this.url, headers: this.headers(), body, secrets: this.secrets, ...(signal && { signal }) };
    const opened = await openEventStream(request, transport);
    if (!opened.ok) return this.failEarly(stream, opened.failure);
    const http = opened.stream;
    const turn = this.newTurn(stream, { ...this.meta(), attempts: http.attempts });
    // The deadline closes before the terminal event is pushed, on every path (a `return` inside
    // the `for await` below reaches the `finally` only after the reader has run).
    turn.beforeEnd = () => http.close();
    const limits = new TurnLimits(this.transport);
    const fail = (cause: RequestFailure) =>
      turn.fail(cause.kind === "aborted" ? "aborted" : "error", redact(cause.message, this.secrets), detailsOf(cause));
    turn.start();
    try {
      reading: for await (const frames of readSseBatches(http.body)) {
        if (http.signal.aborted) return fail(http.failure(undefined));
        // Only a batch with a frame that carried content is progress (keep-alives are not; see
        // progressMark). A batch is read in one go, so its last frame's time is its first one's.
        const mark = turn.progressMark;
        for (const frame of frames) {
          const outcome = this.readFrame(turn, frame);
          if (outcome === "end") break reading;
          if (outcome !== undefined) return fail(outcome);
          const over = limits.check(turn.partial);
          if (over !== undefined) return fail(over);
          if (turn.isEnded) return;
        }
        if (turn.progressMark !== mark) http.progress();
        // The reader has not taken this read's events yet (a server faster than the code that
        // reads the stream): let it catch up before reading on, or the whole answer piles up here.
        if (stream.buffered > 0) await setImmediate();
      }
    } catch (error) {
      return fail(http.failure(error));
    } finally {
      http.close();
    }
    if (http.signal.aborted) return fail(http.failure(undefined));
    turn.finish();
    // #endregion
  }

  private meta(): TurnMeta {
    return { provider: this.provider, model: this.id, timestamp: this.now() };
  }

  /** A failure before any content: a fresh error message, no `start`. */
  private failEarly(stream: AssistantMessageEventStream, cause: RequestFailure): void {
    const error = failedMessage(this.meta(), cause, this.secrets);
    stream.push({ type: "error", reason: error.stopReason === "aborted" ? "aborted" : "error", error });
  }
}
