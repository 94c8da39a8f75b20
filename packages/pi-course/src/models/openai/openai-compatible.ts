/**
 * A `Model` for OpenAI-compatible Chat Completions servers (OpenAI, DeepSeek, Groq, OpenRouter,
 * xAI, llama.cpp, Ollama, vLLM…), over `fetch`.
 *
 * One turn: `POST {baseUrl}/chat/completions` with `stream: true` and usage requested (see
 * `openai-wire.ts`), sent and read by the loop every provider shares (`provider-model.ts`: the
 * transport with its retries, timeouts and redirect policy, server-sent events, per-turn bounds);
 * this file adds the endpoint, the headers and the reading of one frame (`event: error`,
 * `[DONE]`, a JSON chunk), and each chunk is translated into model events by
 * `ChatCompletionsTurn` (`openai-inbound.ts`).
 *
 * Failures are `error` events, never throws. Only the caller's abort ends with reason `aborted`;
 * everything else (an HTTP error status with the provider's message, a refused connection, a
 * timeout, a stall, a refused redirect, a reset mid-stream, a malformed chunk, an in-stream
 * error, a response over a bound) ends with reason `error`, and `errorDetails` says which, for
 * programs. Content received before a failure is kept on the error message. The API key never
 * appears in any event or message: outside texts are redacted before they are clipped, and the
 * whole error text once more before it leaves the adapter.
 */
import type { AssistantMessageEventStream } from "../../event-stream.js";
import { checkTransportOptions, type TransportOptions } from "../http/http-transport.js";
import { checkInputOptions, type InputOptions } from "../http/image-content.js";
import { ChatCompletionsTurn } from "./openai-inbound.js";
import { checkRequestOptions, type ChatRequestOptions } from "./openai-options.js";
import { toChatCompletionsRequest, type ChatCompletionChunk, type ChatCompletionsRequest } from "./openai-wire.js";
import { ProviderModel, providerError, type FrameOutcome, type JsonFrames } from "../http/provider-model.js";
import type { TurnMeta } from "../http/provider-turn.js";
import { readErrorPayload, wireErrorCode } from "../http/request-failure.js";
import type { SseEvent } from "../http/sse.js";
import type { Context } from "../../types.js";
import type { Model, StreamOptions } from "../../model.js";
import { withThinkingLevel } from "./openai-thinking.js";

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
    throw new TypeError('createOpenAICompatibleModel: model must be a non-empty model id, e.g. "gpt-4o-mini"');
  }
  checkTransportOptions(options, "createOpenAICompatibleModel");
  checkRequestOptions(options, "createOpenAICompatibleModel");
  checkInputOptions(options, "createOpenAICompatibleModel");
  return new OpenAICompatibleModel(options);
}

class OpenAICompatibleModel extends ProviderModel<ChatCompletionsTurn> {
  protected readonly url: string;

  constructor(private readonly options: OpenAICompatibleOptions) {
    super(options, { ...options, provider: options.provider ?? "openai-compatible" });
    this.url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  }

  protected body(context: Context, call: StreamOptions): ChatCompletionsRequest {
    if (call.thinking !== undefined)
      return toChatCompletionsRequest(context, withThinkingLevel(this.options, call.thinking));
    return toChatCompletionsRequest(context, this.options);
  }

  protected newTurn(stream: AssistantMessageEventStream, meta: TurnMeta): ChatCompletionsTurn {
    return new ChatCompletionsTurn(stream, meta);
  }

  /** One frame: an `event: error` frame, `[DONE]`, or a JSON chunk for the turn. */
  protected readFrame(turn: ChatCompletionsTurn, frame: SseEvent): FrameOutcome {
    // #region lab 5.5 OpenAICompatibleModel.readFrame
    if (frame.event === "error") {
      const payload = readErrorPayload(frame.data, this.secrets);
      return providerError(payload.text, payload.code);
    }
    if (frame.data === "[DONE]") return "end";
    return this.readJsonFrame(turn, frame, CHUNKS);
    // #endregion
  }

  protected headers(): Record<string, string> {
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
}

/**
 * A chunk is read by the turn's `FrameTemplate` (what `JSON.parse` gives, the repeated delta
 * chunks without re-parsing) and applied by `ChatCompletionsTurn.chunk`.
 */
const CHUNKS: JsonFrames<ChatCompletionsTurn, ChatCompletionChunk> = {
  noun: "chunk",
  parse: (turn, data) => turn.frames.parse(data) as ChatCompletionChunk,
  apply: (turn, chunk) => turn.chunk(chunk),
  codeOf: (chunk) => wireErrorCode(chunk.error),
};
