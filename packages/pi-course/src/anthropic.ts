/**
 * A `Model` for Anthropic's Messages API, over `fetch`.
 *
 * One turn: `POST {baseUrl}/v1/messages` with `stream: true`, the key in `x-api-key` and the API
 * version in `anthropic-version` (see `anthropic-wire.ts`), sent by the shared transport
 * (`http-transport.ts`: retries before the first byte, timeouts, redirect policy, size bound,
 * structured errors); the body is read as server-sent events (`sse.ts`) and each event is
 * translated into model events (`anthropic-inbound.ts`), within the per-turn bounds of
 * `response-limits.ts`.
 *
 * The same contract as the OpenAI-compatible model: `stream()` never throws; every failure is an
 * `error` event (reason `aborted` only for the caller's abort) with `errorDetails` for programs
 * (an `overloaded_error` mid-stream has `code: "overloaded_error"`, `retryable: true`); content
 * received before a failure is kept; the key never appears in any event or message.
 */
import { toAnthropicRequest, ANTHROPIC_VERSION } from "./anthropic-wire.js";
import type { AnthropicStreamEvent } from "./anthropic-wire.js";
import { AnthropicTurn, describeAnthropicError } from "./anthropic-inbound.js";
import { AssistantMessageEventStream } from "./event-stream.js";
import { checkTransportOptions, openEventStream, type TransportOptions } from "./http-transport.js";
import { checkInputOptions, type InputOptions } from "./image-content.js";
import { clip, describeCause, detailsOf, failure, redact, wireErrorCode, type RequestFailure } from "./request-failure.js";
import { TurnLimits } from "./response-limits.js";
import { isRetryableCode } from "./retry-policy.js";
import { readSse } from "./sse.js";
import type { AssistantMessage, Context, Model, StreamOptions } from "./types.js";

/**
 * How to reach Anthropic (or a server that speaks its Messages API). The transport options
 * (`fetch`, `maxRetries`, `timeoutMs`, `idleTimeoutMs`, `maxResponseBytes`…) are documented on
 * `TransportOptions` and `ResponseLimits`.
 */
export interface AnthropicOptions extends TransportOptions, InputOptions {
  /** Defaults to `https://api.anthropic.com` (the `/v1/messages` path is added). */
  baseUrl?: string;
  /** The model id, e.g. `"claude-sonnet-4-5"`; copied to `AssistantMessage.model`. */
  model: string;
  /** Sent as `x-api-key`; redacted from every error. */
  apiKey?: string;
  /** Required by the API: the most output tokens of one turn (thinking included). */
  maxTokens: number;
  /** Extended thinking with this token budget (at least 1024, below `maxTokens`). */
  thinking?: { budgetTokens: number };
  temperature?: number;
  /** Extra request headers (e.g. `anthropic-beta`). */
  headers?: Record<string, string>;
  /** Copied to `AssistantMessage.provider`. Defaults to `"anthropic"`. */
  provider?: string;
  /** The clock for timestamps. Defaults to `Date.now`. */
  now?: () => number;
}

/** Creates the model. Throws only on misuse (no model, no `maxTokens`, an unusable bound). */
export function createAnthropicModel(options: AnthropicOptions): Model {
  // #region lab 5.6 createAnthropicModel
  const who = "createAnthropicModel";
  const baseUrl = options.baseUrl ?? "https://api.anthropic.com";
  if (typeof baseUrl !== "string" || !/^https?:\/\//.test(baseUrl)) {
    throw new TypeError(`${who}: baseUrl must be an http(s) URL such as "https://api.anthropic.com", got ${JSON.stringify(baseUrl)}`);
  }
  const endpoint = /(\/v1)?\/messages\/*$/.exec(baseUrl);
  if (endpoint !== null) {
    throw new TypeError(
      `${who}: baseUrl is the server's base, without the endpoint: "${baseUrl.slice(0, endpoint.index)}" ` +
        `(the adapter adds /v1/messages), got ${JSON.stringify(baseUrl)}`,
    );
  }
  if (typeof options.model !== "string" || options.model === "") {
    throw new TypeError(`${who}: model must be a non-empty model id, e.g. "claude-sonnet-4-5"`);
  }
  if (!Number.isSafeInteger(options.maxTokens) || options.maxTokens < 1) {
    throw new TypeError(`${who}: maxTokens is required by the Messages API: a positive integer, e.g. 4096.`);
  }
  const budget = options.thinking?.budgetTokens;
  if (budget !== undefined && !(Number.isSafeInteger(budget) && budget >= 1024 && budget < options.maxTokens)) {
    throw new TypeError(`${who}: thinking.budgetTokens must be an integer ≥ 1024 and below maxTokens (${options.maxTokens}).`);
  }
  checkTransportOptions(options, who);
  checkInputOptions(options, who);
  return new AnthropicModel({ ...options, baseUrl });
  // #endregion
}

class AnthropicModel implements Model {
  readonly provider: string;
  readonly id: string;
  private readonly url: string;
  private readonly now: () => number;
  /** Never shown in an error. */
  private readonly secrets: string[];

  constructor(private readonly options: AnthropicOptions & { baseUrl: string }) {
    this.provider = options.provider ?? "anthropic";
    this.id = options.model;
    this.url = `${options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/messages`;
    this.now = options.now ?? Date.now;
    this.secrets = options.apiKey ? [options.apiKey] : [];
  }

  stream(context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    const stream = new AssistantMessageEventStream();
    this.run(stream, context, options.signal).catch((error: unknown) => {
      // Unreachable by design; still, a bug must end the turn, not hang it.
      this.failEarly(stream, failure("protocol", `Internal error in the adapter: ${describeCause(error)}`));
    });
    return stream;
  }

  private async run(stream: AssistantMessageEventStream, context: Context, signal: AbortSignal | undefined): Promise<void> {
    let body: string;
    try {
      body = JSON.stringify(toAnthropicRequest(context, this.options));
    } catch (error) {
      return this.failEarly(stream, failure("request", `The request could not be built: ${describeCause(error)}`));
    }
    const request = { url: this.url, headers: this.headers(), body, secrets: this.secrets, ...(signal && { signal }) };
    const opened = await openEventStream(request, this.options);
    if (!opened.ok) return this.failEarly(stream, opened.failure);
    const http = opened.stream;
    const turn = new AnthropicTurn(stream, { provider: this.provider, model: this.id, timestamp: this.now() });
    const limits = new TurnLimits(this.options);
    const fail = (cause: RequestFailure) =>
      turn.fail(cause.kind === "aborted" ? "aborted" : "error", redact(cause.message, this.secrets), detailsOf(cause));
    turn.start();
    try {
      for await (const frame of readSse(http.body)) {
        http.progress();
        let event: AnthropicStreamEvent;
        try {
          event = JSON.parse(frame.data) as AnthropicStreamEvent;
        } catch {
          return fail(failure("protocol", `The server sent a malformed event: ${clip(frame.data, this.secrets)}`));
        }
        let error: string | undefined;
        try {
          error = frame.event === "error" && event?.type !== "error" ? describeAnthropicError(event) : turn.event(event);
        } catch (cause) {
          const text = `The server sent an event this adapter cannot read (${describeCause(cause)}): ${clip(frame.data, this.secrets)}`;
          return fail(failure("protocol", text));
        }
        if (error !== undefined) {
          const code = wireErrorCode(event?.error);
          return fail(
            failure("provider", `The provider reported an error: ${clip(error, this.secrets)}`, {
              ...(code !== undefined && { code }),
              retryable: isRetryableCode(code),
            }),
          );
        }
        const over = limits.check(turn.partial);
        if (over !== undefined) return fail(over);
        if (http.signal.aborted) return fail(http.failure(undefined));
        if (turn.isEnded) return;
      }
    } catch (error) {
      return fail(http.failure(error));
    } finally {
      http.close();
    }
    if (http.signal.aborted) return fail(http.failure(undefined));
    turn.finish();
  }

  private headers(): Record<string, string> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
      "anthropic-version": ANTHROPIC_VERSION,
      ...this.options.headers,
    };
    if (this.options.apiKey !== undefined && this.options.apiKey !== "") headers["x-api-key"] = this.options.apiKey;
    return headers;
  }

  /** A failure before any content: a fresh error message, no `start`. */
  private failEarly(stream: AssistantMessageEventStream, cause: RequestFailure): void {
    const reason = cause.kind === "aborted" ? "aborted" : "error";
    const error: AssistantMessage = {
      role: "assistant",
      content: [],
      provider: this.provider,
      model: this.id,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason: reason,
      errorMessage: redact(cause.message, this.secrets),
      errorDetails: detailsOf(cause),
      timestamp: this.now(),
    };
    stream.push({ type: "error", reason, error });
  }
}
