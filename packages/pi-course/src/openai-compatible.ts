/**
 * A `Model` for OpenAI-compatible Chat Completions servers (OpenAI, DeepSeek, Groq, OpenRouter,
 * xAI, llama.cpp, Ollama, vLLM…), over `fetch`.
 *
 * One turn: `POST {baseUrl}/chat/completions` with `stream: true` and usage requested (see
 * `openai-wire.ts`), sent by the shared transport (`http-transport.ts`: retries before the first
 * byte, timeouts, redirect policy, size bound, structured errors); then the body is read as
 * server-sent events (`sse.ts`) and each chunk is translated into model events
 * (`openai-inbound.ts`), within the per-turn bounds of `response-limits.ts`.
 *
 * Failures are `error` events, never throws. Only the caller's abort ends with reason `aborted`;
 * everything else (an HTTP error status with the provider's message, a refused connection, a
 * timeout, a stall, a refused redirect, a reset mid-stream, a malformed chunk, an in-stream
 * error, a response over a bound) ends with reason `error`, and `errorDetails` says which, for
 * programs. Content received before a failure is kept on the error message. The API key never
 * appears in any event or message: outside texts are redacted before they are clipped, and the
 * whole error text once more before it leaves the adapter.
 */
import { AssistantMessageEventStream } from "./event-stream.js";
import { checkTransportOptions, openEventStream, type TransportOptions } from "./http-transport.js";
import { checkInputOptions, type InputOptions } from "./image-content.js";
import { ChatCompletionsTurn } from "./openai-inbound.js";
import { checkRequestOptions, type ChatRequestOptions } from "./openai-options.js";
import { toChatCompletionsRequest } from "./openai-wire.js";
import type { ChatCompletionChunk } from "./openai-wire.js";
import {
  clip,
  describeCause,
  detailsOf,
  failure,
  readErrorPayload,
  redact,
  wireErrorCode,
  type RequestFailure,
} from "./request-failure.js";
import { TurnLimits } from "./response-limits.js";
import { isRetryableCode } from "./retry-policy.js";
import { readSse } from "./sse.js";
import type { AssistantMessage, Context, Model, StreamOptions } from "./types.js";

/**
 * How to reach an OpenAI-compatible server. The transport options (`fetch`, `maxRetries`,
 * `timeoutMs`, `idleTimeoutMs`, `maxResponseBytes`, `maxContentBlocks`, `maxToolCalls`…) and
 * their defaults are documented on `TransportOptions` and `ResponseLimits`.
 */
export interface OpenAICompatibleOptions extends TransportOptions, ChatRequestOptions, InputOptions {
  /** E.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1` (no trailing path). */
  baseUrl: string;
  /** The model id sent in every request, and copied to `AssistantMessage.model`. */
  model: string;
  /** Sent as `Authorization: Bearer …`; redacted from every error. */
  apiKey?: string;
  /** Extra request headers (e.g. `HTTP-Referer` for OpenRouter). */
  headers?: Record<string, string>;
  /** Sent as `max_tokens`. */
  maxTokens?: number;
  temperature?: number;
  /** Copied to `AssistantMessage.provider`. Defaults to `"openai-compatible"`. */
  provider?: string;
  /** The clock for timestamps. Defaults to `Date.now`. */
  now?: () => number;
}

/** Creates the model. Throws only on misuse (no `baseUrl` or `model`, an unusable bound). */
export function createOpenAICompatibleModel(options: OpenAICompatibleOptions): Model {
  if (typeof options.baseUrl !== "string" || !/^https?:\/\//.test(options.baseUrl)) {
    throw new TypeError(
      `createOpenAICompatibleModel: baseUrl must be an http(s) URL such as "https://api.openai.com/v1", got ${JSON.stringify(options.baseUrl)}`,
    );
  }
  const endpoint = /\/chat\/completions\/*$/.exec(options.baseUrl);
  if (endpoint !== null) {
    throw new TypeError(
      `createOpenAICompatibleModel: baseUrl is the server's base, without the endpoint: ` +
        `"${options.baseUrl.slice(0, endpoint.index)}" (the adapter adds /chat/completions), got ${JSON.stringify(options.baseUrl)}`,
    );
  }
  if (typeof options.model !== "string" || options.model === "") {
    throw new TypeError("createOpenAICompatibleModel: model must be a non-empty model id, e.g. \"gpt-4o-mini\"");
  }
  checkTransportOptions(options, "createOpenAICompatibleModel");
  checkRequestOptions(options, "createOpenAICompatibleModel");
  checkInputOptions(options, "createOpenAICompatibleModel");
  return new OpenAICompatibleModel(options);
}

class OpenAICompatibleModel implements Model {
  readonly provider: string;
  readonly id: string;
  private readonly url: string;
  private readonly now: () => number;
  /** Never shown in an error. */
  private readonly secrets: string[];

  constructor(private readonly options: OpenAICompatibleOptions) {
    this.provider = options.provider ?? "openai-compatible";
    this.id = options.model;
    this.url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
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

  private async run(
    stream: AssistantMessageEventStream,
    context: Context,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    // #region lab 5.5 OpenAICompatibleModel.run
    let body: string;
    try {
      body = JSON.stringify(toChatCompletionsRequest(context, this.options));
    } catch (error) {
      return this.failEarly(stream, failure("request", `The request could not be built: ${describeCause(error)}`));
    }
    const request = { url: this.url, headers: this.headers(), body, secrets: this.secrets, ...(signal && { signal }) };
    const opened = await openEventStream(request, this.options);
    if (!opened.ok) return this.failEarly(stream, opened.failure);
    const http = opened.stream;
    const turn = new ChatCompletionsTurn(stream, { provider: this.provider, model: this.id, timestamp: this.now() });
    const limits = new TurnLimits(this.options);
    const fail = (cause: RequestFailure) =>
      turn.fail(cause.kind === "aborted" ? "aborted" : "error", this.redact(cause.message), detailsOf(cause));
    turn.start();
    try {
      for await (const frame of readSse(http.body)) {
        http.progress();
        if (frame.event === "error") {
          const payload = readErrorPayload(frame.data, this.secrets);
          return fail(providerError(payload.text, payload.code));
        }
        if (frame.data === "[DONE]") break;
        let chunk: ChatCompletionChunk;
        try {
          chunk = JSON.parse(frame.data) as ChatCompletionChunk;
        } catch {
          return fail(failure("protocol", `The server sent a malformed chunk: ${clip(frame.data, this.secrets)}`));
        }
        let error: string | undefined;
        try {
          error = turn.chunk(chunk);
        } catch (cause) {
          const text = `The server sent a chunk this adapter cannot read (${describeCause(cause)}): ${clip(frame.data, this.secrets)}`;
          return fail(failure("protocol", text));
        }
        if (error !== undefined) return fail(providerError(clip(error, this.secrets), wireErrorCode(chunk.error)));
        const over = limits.check(turn.partial);
        if (over !== undefined) return fail(over);
        if (http.signal.aborted) return fail(http.failure(undefined));
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

  private headers(): Record<string, string> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
      ...this.options.headers,
    };
    if (this.options.apiKey !== undefined && this.options.apiKey !== "") {
      headers.authorization = `Bearer ${this.options.apiKey}`;
    }
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
      errorMessage: this.redact(cause.message),
      errorDetails: detailsOf(cause),
      timestamp: this.now(),
    };
    stream.push({ type: "error", reason, error });
  }

  /** Removes the API key from a text that may have come from anywhere. */
  private redact(text: string): string {
    return redact(text, this.secrets);
  }
}

/** An error the server reported inside its stream (a chunk's `error`, an `event: error` frame). */
function providerError(text: string, code: string | undefined): RequestFailure {
  return failure("provider", `The provider reported an error: ${text}`, {
    ...(code !== undefined && { code }),
    retryable: isRetryableCode(code),
  });
}
