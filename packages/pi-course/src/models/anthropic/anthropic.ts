/**
 * A `Model` for Anthropic's Messages API, over `fetch`.
 *
 * One turn: `POST {baseUrl}/v1/messages` with `stream: true`, the key in `x-api-key` and the API
 * version in `anthropic-version` (see `anthropic-wire.ts`), sent and read by the loop every
 * provider shares (`provider-model.ts`: transport, server-sent events, per-turn bounds); this
 * file adds the endpoint, the headers and the reading of one frame, and each event is
 * translated into model events by `AnthropicTurn` (`anthropic-inbound.ts`).
 *
 * The same contract as the OpenAI-compatible model: `stream()` never throws; every failure is an
 * `error` event (reason `aborted` only for the caller's abort) with `errorDetails` for programs
 * (an `overloaded_error` mid-stream has `code: "overloaded_error"`, `retryable: true`); content
 * received before a failure is kept; the key never appears in any event or message.
 */
import { toAnthropicRequest, ANTHROPIC_VERSION } from "./anthropic-wire.js";
import type { AnthropicRequest, AnthropicStreamEvent } from "./anthropic-wire.js";
import { AnthropicTurn, describeAnthropicError } from "./anthropic-inbound.js";
import type { AssistantMessageEventStream } from "../../event-stream.js";
import { checkTransportOptions, type TransportOptions } from "../http/http-transport.js";
import { checkInputOptions, type InputOptions } from "../http/image-content.js";
import { ProviderModel, type FrameOutcome, type JsonFrames } from "../http/provider-model.js";
import type { TurnMeta } from "../http/provider-turn.js";
import { wireErrorCode } from "../http/request-failure.js";
import type { SseEvent } from "../http/sse.js";
import type { Context } from "../../types.js";
import type { Model, StreamOptions } from "../../model.js";
import { withAnthropicThinking } from "./anthropic-thinking.js";

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
    throw new TypeError(
      `${who}: baseUrl must be an http(s) URL such as "https://api.anthropic.com", got ${JSON.stringify(baseUrl)}`,
    );
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
    throw new TypeError(
      `${who}: thinking.budgetTokens must be an integer ≥ 1024 and below maxTokens (${options.maxTokens}).`,
    );
  }
  checkTransportOptions(options, who);
  checkInputOptions(options, who);
  return new AnthropicModel({ ...options, baseUrl });
  // #endregion
}

/**
 * An event is read by the turn's `FrameTemplate` (what `JSON.parse` gives, the repeated delta
 * events without re-parsing) and applied by `AnthropicTurn.event`.
 */
const EVENTS: JsonFrames<AnthropicTurn, AnthropicStreamEvent> = {
  noun: "event",
  parse: (turn, data) => turn.frames.parse(data) as AnthropicStreamEvent,
  apply: (turn, event, frame) =>
    frame.event === "error" && event?.type !== "error" ? describeAnthropicError(event) : turn.event(event),
  codeOf: (event) => wireErrorCode(event?.error),
};

class AnthropicModel extends ProviderModel<AnthropicTurn> {
  protected readonly url: string;

  constructor(private readonly options: AnthropicOptions & { baseUrl: string }) {
    super(options, { ...options, provider: options.provider ?? "anthropic" });
    this.url = `${options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/messages`;
  }

  protected body(context: Context, call: StreamOptions): AnthropicRequest {
    if (call.thinking !== undefined)
      return toAnthropicRequest(context, withAnthropicThinking(this.options, call.thinking));
    return toAnthropicRequest(context, this.options);
  }

  protected newTurn(stream: AssistantMessageEventStream, meta: TurnMeta): AnthropicTurn {
    return new AnthropicTurn(stream, meta);
  }

  /** One frame: a JSON event for the turn (an `event: error` frame may carry a bare error object). */
  protected readFrame(turn: AnthropicTurn, frame: SseEvent): FrameOutcome {
    return this.readJsonFrame(turn, frame, EVENTS);
  }

  protected headers(): Record<string, string> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
      "anthropic-version": ANTHROPIC_VERSION,
      ...this.options.headers,
    };
    if (this.options.apiKey !== undefined && this.options.apiKey !== "") headers["x-api-key"] = this.options.apiKey;
    return headers;
  }
}
