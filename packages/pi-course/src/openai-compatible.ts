/**
 * A `Model` for OpenAI-compatible Chat Completions servers (OpenAI, DeepSeek, Groq, OpenRouter,
 * xAI, llama.cpp, Ollama, vLLM…), over `fetch`.
 *
 * One turn: `POST {baseUrl}/chat/completions` with `stream: true` and usage requested (see
 * `openai-wire.ts`), then the body is read as server-sent events (`sse.ts`) and each chunk is
 * translated into model events (`openai-inbound.ts`).
 *
 * Failures are `error` events, never throws: an abort (before the request, while waiting for
 * the headers, mid-stream) ends with reason `aborted`; an HTTP error status (with the
 * provider's message from the body), a JSON answer where a stream was expected, a refused
 * connection, a reset mid-stream, a malformed chunk, an in-stream error object or
 * `event: error` frame end with reason `error`. A stalled server is ended by the caller's
 * signal (there is no built-in timeout). Content
 * received before a failure is kept on the error message. The API key never appears in any
 * event or message: every error text is redacted before it leaves the adapter.
 */
import { AssistantMessageEventStream } from "./event-stream.js";
import { ChatCompletionsTurn, describeWireError } from "./openai-inbound.js";
import { toChatCompletionsRequest } from "./openai-wire.js";
import type { ChatCompletionChunk } from "./openai-wire.js";
import { readSse } from "./sse.js";
import type { AssistantMessage, Context, Model, StreamOptions } from "./types.js";

/** How to reach an OpenAI-compatible server. */
export interface OpenAICompatibleOptions {
  /** E.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1` (no trailing path). */
  baseUrl: string;
  /** The model id sent in every request, and copied to `AssistantMessage.model`. */
  model: string;
  /** Sent as `Authorization: Bearer …`; redacted from every error. */
  apiKey?: string;
  /** Extra request headers (e.g. `HTTP-Referer` for OpenRouter). */
  headers?: Record<string, string>;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Sent as `max_tokens`. */
  maxTokens?: number;
  temperature?: number;
  /** Copied to `AssistantMessage.provider`. Defaults to `"openai-compatible"`. */
  provider?: string;
  /** The clock for timestamps. Defaults to `Date.now`. */
  now?: () => number;
}

/** At most this much of an error body is read. */
const MAX_ERROR_BODY = 64 * 1024;

/** Creates the model. Throws only on misuse (no `baseUrl` or `model`). */
export function createOpenAICompatibleModel(options: OpenAICompatibleOptions): Model {
  if (typeof options.baseUrl !== "string" || !/^https?:\/\//.test(options.baseUrl)) {
    throw new TypeError(
      `createOpenAICompatibleModel: baseUrl must be an http(s) URL such as "https://api.openai.com/v1", got ${JSON.stringify(options.baseUrl)}`,
    );
  }
  if (typeof options.model !== "string" || options.model === "") {
    throw new TypeError("createOpenAICompatibleModel: model must be a non-empty model id, e.g. \"gpt-4o-mini\"");
  }
  return new OpenAICompatibleModel(options);
}

class OpenAICompatibleModel implements Model {
  readonly provider: string;
  readonly id: string;
  private readonly url: string;
  private readonly fetchFn: typeof fetch;
  private readonly now: () => number;

  constructor(private readonly options: OpenAICompatibleOptions) {
    this.provider = options.provider ?? "openai-compatible";
    this.id = options.model;
    this.url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.now = options.now ?? Date.now;
  }

  stream(context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    const stream = new AssistantMessageEventStream();
    this.run(stream, context, options.signal).catch((error: unknown) => {
      // Unreachable by design; still, a bug must end the turn, not hang it.
      this.failEarly(stream, "error", `Internal error in the adapter: ${describe(error)}`);
    });
    return stream;
  }

  private async run(
    stream: AssistantMessageEventStream,
    context: Context,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    // #region lab 5.5 OpenAICompatibleModel.run
    if (signal?.aborted) return this.failEarly(stream, "aborted", "Request was aborted before it was sent.");
    let body: string;
    try {
      body = JSON.stringify(toChatCompletionsRequest(context, this.options));
    } catch (error) {
      return this.failEarly(stream, "error", `The request could not be built: ${describe(error)}`);
    }
    let response: Response;
    try {
      response = await this.fetchFn(this.url, { method: "POST", headers: this.headers(), body, signal });
    } catch (error) {
      if (signal?.aborted) return this.failEarly(stream, "aborted", "Request was aborted while waiting for the server.");
      return this.failEarly(stream, "error", `Request to ${this.url} failed: ${describe(error)}`);
    }
    if (!response.ok || response.body === null) {
      const detail = await readErrorBody(response);
      if (signal?.aborted) return this.failEarly(stream, "aborted", "Request was aborted while reading the error response.");
      const status = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
      return this.failEarly(stream, "error", response.ok ? `${status}: the response has no body.` : `${status}: ${detail}`);
    }
    if (/^application\/json/i.test(response.headers.get("content-type") ?? "")) {
      // A server that ignored `stream: true` (or a proxy's error page with status 200).
      const detail = await readErrorBody(response);
      return this.failEarly(stream, "error", `HTTP ${response.status}: expected an event stream, got JSON: ${detail}`);
    }
    const turn = new ChatCompletionsTurn(stream, { provider: this.provider, model: this.id, timestamp: this.now() });
    const fail = (reason: "error" | "aborted", message: string) => turn.fail(reason, this.redact(message));
    turn.start();
    try {
      for await (const frame of readSse(response.body)) {
        if (frame.event === "error") return fail("error", `The provider reported an error: ${errorText(frame.data)}`);
        if (frame.data === "[DONE]") break;
        let chunk: ChatCompletionChunk;
        try {
          chunk = JSON.parse(frame.data) as ChatCompletionChunk;
        } catch {
          return fail("error", `The server sent a malformed chunk: ${excerpt(frame.data)}`);
        }
        let error: string | undefined;
        try {
          error = turn.chunk(chunk);
        } catch (cause) {
          error = `a chunk this adapter cannot read (${describe(cause)}): ${excerpt(frame.data)}`;
        }
        if (error !== undefined) return fail("error", `The provider reported an error: ${error}`);
        if (signal?.aborted) return fail("aborted", "Request was aborted mid-stream.");
      }
    } catch (error) {
      if (signal?.aborted) return fail("aborted", "Request was aborted mid-stream.");
      return fail("error", `The connection failed mid-stream: ${describe(error)}`);
    }
    if (signal?.aborted) return fail("aborted", "Request was aborted mid-stream.");
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
  private failEarly(stream: AssistantMessageEventStream, reason: "error" | "aborted", text: string): void {
    const error: AssistantMessage = {
      role: "assistant",
      content: [],
      provider: this.provider,
      model: this.id,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason: reason,
      errorMessage: this.redact(text),
      timestamp: this.now(),
    };
    stream.push({ type: "error", reason, error });
  }

  /** Removes the API key from a text that may have come from anywhere. */
  private redact(text: string): string {
    const key = this.options.apiKey;
    if (key === undefined || key === "") return text;
    const whole = text.split(key).join("[redacted]");
    // excerpt() may have cut the text inside the key: a key's head right before the "…" goes too.
    for (let n = key.length - 1; n > 0; n--) if (whole.endsWith(`${key.slice(0, n)}…`)) return `${whole.slice(0, -n - 1)}[redacted]…`;
    return whole;
  }
}

/** The provider's message from an error body (JSON `error.message`, `message`, …) or its text. */
async function readErrorBody(response: Response): Promise<string> {
  let text = "";
  try {
    const reader = response.body?.getReader();
    if (reader !== undefined) {
      const decoder = new TextDecoder();
      while (text.length < MAX_ERROR_BODY) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      await reader.cancel().catch(() => {});
    }
  } catch (error) {
    return text === "" ? `(the error body could not be read: ${describe(error)})` : errorText(text);
  }
  return text.trim() === "" ? "(empty body)" : errorText(text);
}

/** The readable part of an error payload: `error.message`, `message`, `detail`, or the text. */
function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as Record<string, unknown> | null;
    if (parsed !== null && typeof parsed === "object") {
      if (parsed.error !== undefined && parsed.error !== null) return describeWireError(parsed.error);
      if (typeof parsed.message === "string") return parsed.message;
      if (typeof parsed.detail === "string") return parsed.detail;
    }
  } catch {
    // not JSON: the text itself
  }
  return excerpt(text.trim());
}

function excerpt(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/** An error's message, with its cause (fetch puts ECONNREFUSED and resets there). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${error.message} (${typeof code === "string" ? `${code}: ` : ""}${cause.message})`;
  }
  return error.message;
}
