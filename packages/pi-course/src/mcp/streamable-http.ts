/**
 * The Streamable HTTP transport: every message the client sends is a POST to one URL
 * (`Accept: application/json, text/event-stream`); the server answers a request with JSON or
 * with an event stream (SSE) that carries progress and other messages before the response, and
 * a notification or a client response with 202. After `initialize` the server names a session
 * (`mcp-session-id`), which every later request carries with `mcp-protocol-version`; messages the
 * server starts on its own (list changes, `roots/list`, logs) come on a GET event stream; DELETE
 * ends the session.
 *
 * Streams are resumed as the 2025-11-25 specification describes: a response stream that ends
 * before its answer, after the server gave an event id, is read on from a GET carrying
 * `Last-Event-ID` once the server's `retry` has passed (the server replays what came after that
 * event), until the answer comes, the request is cancelled, or `MAX_EMPTY_RESUMES` resumptions in
 * a row bring nothing. The GET stream is opened again whenever it ends (after its `retry`, then
 * with a doubling backoff up to `MAX_RETRY_MS` while reopening brings nothing), so list changes
 * sent later are not lost.
 *
 * Failures never leave a call pending: an HTTP error rejects the send (the connection ends the
 * request with the status and the server's message), and a response stream that ends before the
 * answer and cannot be resumed is turned into a JSON-RPC error for that request. A lost session
 * (404, or the 400 "No valid session ID" some servers send) is answered by one new `initialize`,
 * then the message is sent again.
 *
 * With `auth`, each request carries its `Authorization` header; a 401 is reported to it (a
 * refresh, or an error that says to log in) and the message sent again once; a 403 likewise
 * when the auth gets a token with the wider scope (see `auth/http-auth.ts`).
 */
import { errorText } from "../base/errors.js";
import { OutboundError, outboundFetch } from "../models/http/outbound.js";
import { DEFAULT_LIMITS } from "../models/http/response-limits.js";
import { readSse } from "../models/http/sse.js";
import type { HttpAuth } from "./auth/http-auth.js";
import { ErrorCode, isRequest, readMessage, type JsonRpcMessage, type JsonRpcRequest } from "./json-rpc.js";
import type { McpTransport, TransportHandlers } from "./transport.js";

/** How long to wait before reconnecting a stream when the server named no `retry`: 1 s. */
export const DEFAULT_RETRY_MS = 1_000;
/** The longest wait before reconnecting, whatever the server's `retry` says: 30 s. */
export const MAX_RETRY_MS = 30_000;
/** Resumptions of one response stream in a row that bring no event before the call fails: 5. */
export const MAX_EMPTY_RESUMES = 5;

/** How to reach a Streamable HTTP server. */
export interface HttpServerParameters {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3001/mcp`. */
  url: string;
  /** Sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Authorization (`McpOAuth`): its Bearer header goes with every request; a 401 is reported
   * and the request sent again once, a 403 `insufficient_scope` too when it says so.
   */
  auth?: HttpAuth;
  /**
   * The most bytes one POST response may bring (its JSON, or its whole event stream, after
   * decompression), and one event of the GET stream; past it the call (or the GET stream) ends
   * with an error instead of memory growing without end. Default `DEFAULT_MAX_RESPONSE_BYTES`
   * (64 MiB, as the model providers).
   */
  maxResponseBytes?: number;
}

/** The default of `HttpServerParameters.maxResponseBytes`. */
export const DEFAULT_MAX_RESPONSE_BYTES = DEFAULT_LIMITS.maxResponseBytes;

/** A JSON-RPC transport over Streamable HTTP. */
export class HttpTransport implements McpTransport {
  private handlers: TransportHandlers | undefined;
  private sessionId: string | undefined;
  private ended = false;
  /** The initialize request, kept to start a new session if the server loses this one. */
  private initialize: JsonRpcRequest | undefined;
  private readonly streams = new AbortController();
  private getStreamOpen = false;
  /** Requests the client cancelled: their streams are not resumed. */
  private readonly cancelled = new Set<JsonRpcRequest["id"]>();
  /** The `Authorization` of the last request (the DELETE of `close` sends it). */
  private lastAuthorization: string | undefined;
  protocolVersion?: string;

  constructor(readonly params: HttpServerParameters) {}

  /** The session id the server gave, once initialized. */
  get session(): string | undefined {
    return this.sessionId;
  }

  async start(handlers: TransportHandlers): Promise<void> {
    this.handlers = handlers;
  }

  async send(message: JsonRpcMessage): Promise<void> {
    if (this.ended) throw new Error("the HTTP transport is closed");
    if (isRequest(message) && message.method === "initialize") this.initialize = message;
    if ("method" in message && message.method === "notifications/cancelled" && !isRequest(message)) {
      const id = (message.params as { requestId?: JsonRpcRequest["id"] } | undefined)?.requestId;
      if (id !== undefined) this.cancelled.add(id);
    }
    // Messages the server starts come on the GET stream; open it before `initialized`, which is
    // when servers send their first ones (a list_changed sent before it opens is lost).
    if ("method" in message && message.method === "notifications/initialized" && !isRequest(message))
      await this.openGetStream();
    const hadSession = this.sessionId !== undefined;
    const response = await this.post(message);
    if (hadSession && (await this.lostSession(response)) && this.initialize !== undefined) {
      this.handlers?.onDiagnostic?.("the server lost the session; initializing a new one");
      this.sessionId = undefined;
      await this.reinitialize();
      await this.deliverResponse(message, await this.post(message));
      return;
    }
    await this.deliverResponse(message, response);
  }

  /** Ends the transport: the GET stream is closed and the session deleted (DELETE). */
  async close(): Promise<void> {
    // #region lab 17.6 HttpTransport.close
    if (this.ended) return;
    this.ended = true;
    this.streams.abort();
    if (this.sessionId !== undefined) {
      // the last Authorization sent, not a new one: a login or refresh in progress must not hold up closing
      await this.fetch(this.params.url, { method: "DELETE", headers: await this.headers(false, false) })
        .then((response) => response.body?.cancel())
        .catch(() => {}); // a server that is already gone has no session to delete
    }
    this.handlers?.onClose(new Error("the connection was closed"));
    // #endregion
  }

  /**
   * POSTs `message` (again after the auth got a new token for a 401 or a wider one for a 403);
   * the response's body (whatever reads it) fails past `maxResponseBytes`.
   */
  private async post(message: JsonRpcMessage): Promise<Response> {
    const auth = this.params.auth;
    let response = await this.postOnce(message);
    // at most one retry per status, whatever the auth does: a second 401 or 403 is the request's error
    let retried401 = false;
    let retried403 = false;
    while (auth !== undefined && (response.status === 401 || response.status === 403)) {
      const challenge = response.headers.get("www-authenticate");
      const body = response.body;
      const cancelAndThrow = async (error: unknown): Promise<never> => {
        await body?.cancel();
        throw error;
      };
      if (response.status === 403) {
        // a 403 the auth cannot answer with a wider scope is the request's error, with the server's words
        if (retried403 || !(await auth.forbidden(challenge).catch(cancelAndThrow))) break;
        retried403 = true;
        await body?.cancel();
      } else if (retried401) {
        await auth.unauthorized(challenge, true).catch(cancelAndThrow);
        break;
      } else {
        retried401 = true;
        await body?.cancel();
        await auth.unauthorized(challenge, false);
      }
      response = await this.postOnce(message);
    }
    return response;
  }

  private async postOnce(message: JsonRpcMessage): Promise<Response> {
    const response = await this.fetch(this.params.url, {
      method: "POST",
      headers: { ...(await this.headers(true)), "content-type": "application/json" },
      body: JSON.stringify(message),
      signal: this.streams.signal,
    }).catch((error: Error) => {
      if (error instanceof OutboundError) throw error;
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new Error(`cannot reach the MCP server at ${this.params.url}: ${cause ?? error.message}`);
    });
    return response;
  }

  /** The headers of a request; `ask`: ask the auth for its header (else the last one sent, or none). */
  private async headers(post: boolean, ask = true): Promise<Record<string, string>> {
    const headers: Record<string, string> = { ...this.params.headers };
    const authorization = ask ? await this.params.auth?.authorization() : this.lastAuthorization;
    if (ask) this.lastAuthorization = authorization;
    if (authorization !== undefined) headers.authorization = authorization;
    // #region lab 17.6 HttpTransport.headers
    headers.accept = post ? "application/json, text/event-stream" : "text/event-stream";
    if (this.sessionId !== undefined) headers["mcp-session-id"] = this.sessionId;
    if (this.protocolVersion !== undefined) headers["mcp-protocol-version"] = this.protocolVersion;
    return headers;
    // #endregion
  }

  /** 404 for a request with a session id, or a 400 whose body says the session is not valid. */
  private async lostSession(response: Response): Promise<boolean> {
    if (response.status === 404) return true;
    if (response.status !== 400) return false;
    const text = await response
      .clone()
      .text()
      .catch(() => "");
    return /session/i.test(text);
  }

  /** A new session: `initialize` again (a new id), then `notifications/initialized`. */
  private async reinitialize(): Promise<void> {
    const request: JsonRpcRequest = { ...this.initialize!, id: `reinitialize-${Date.now()}` };
    const response = await this.post(request);
    await this.failOnHttpError(request, response);
    this.sessionId = response.headers.get("mcp-session-id") ?? undefined;
    const messages = await this.readAll(response);
    const answer = messages.find((m) => "id" in m && m.id === request.id);
    if (answer === undefined || "error" in answer)
      throw new Error("the server refused a new session after losing the old one");
    await this.deliverResponse(
      { jsonrpc: "2.0", method: "notifications/initialized" },
      await this.post({ jsonrpc: "2.0", method: "notifications/initialized" }),
    );
  }

  /** Delivers what the server answered to `message`: nothing (202), JSON, or an event stream. */
  private async deliverResponse(message: JsonRpcMessage, response: Response): Promise<void> {
    // #region lab 17.6 HttpTransport.deliverResponse
    await this.failOnHttpError(message, response);
    const session = response.headers.get("mcp-session-id");
    if (session !== null) this.sessionId = session;
    if (response.status === 202 || !isRequest(message)) {
      await response.body?.cancel();
      return;
    }
    const type = response.headers.get("content-type") ?? "";
    if (type.includes("text/event-stream")) {
      // the stream is read in the background: send resolves once the request is accepted
      void this.readStream(response, message.id);
      return;
    }
    for (const reply of await this.readAll(response)) this.handlers?.onMessage(reply);
    // #endregion
  }

  private async failOnHttpError(message: JsonRpcMessage, response: Response): Promise<void> {
    if (response.ok) return;
    const body = await response.text().catch(() => "");
    let detail = body.slice(0, 500);
    try {
      const parsed = JSON.parse(body) as { error?: { message?: string } };
      if (typeof parsed.error?.message === "string") detail = parsed.error.message;
    } catch {
      // not JSON: the text as it is
    }
    const what = "method" in message ? message.method : "a response";
    throw new Error(`the server answered ${what} with HTTP ${response.status}${detail !== "" ? `: ${detail}` : ""}`);
  }

  /** Every message of a response body, JSON (one message or a batch) or SSE. */
  private async readAll(response: Response): Promise<JsonRpcMessage[]> {
    // #region lab 17.6 HttpTransport.readAll
    const type = response.headers.get("content-type") ?? "";
    const out: JsonRpcMessage[] = [];
    if (type.includes("text/event-stream")) {
      for await (const event of readSse(response.body!)) {
        const message = this.parse(event.data);
        if (message !== undefined) out.push(message);
      }
      return out;
    }
    const text = await response.text();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`the server answered with a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      const message = readMessage(item);
      if (typeof message === "string")
        this.handlers?.onDiagnostic?.(`dropped a message that is not JSON-RPC (${message})`);
      else out.push(message);
    }
    return out;
    // #endregion
  }

  /**
   * The POST event stream of request `id`: every message delivered. A stream that ends before
   * the answer is resumed (see the file comment) when the server gave an event id; otherwise, or
   * when resuming fails, the request is answered with an error that says why.
   */
  private async readStream(first: Response, id: JsonRpcRequest["id"]): Promise<void> {
    let response: Response | undefined = first;
    let lastEventId: string | undefined;
    let retryMs = DEFAULT_RETRY_MS;
    let empty = 0;
    let failure = "the server ended the response stream before answering";
    while (response !== undefined) {
      let fresh = false;
      try {
        for await (const event of readSse(response.body!)) {
          if (event.id !== undefined) lastEventId = event.id;
          if (event.retry !== undefined) retryMs = event.retry;
          fresh = true;
          const message = this.parse(event.data);
          if (message === undefined) continue;
          this.handlers?.onMessage(message);
          // The request is answered: release the stream, whether or not the server closes it.
          if ("id" in message && message.id === id && !("method" in message)) return;
        }
        failure = "the server ended the response stream before answering";
      } catch (error) {
        if (this.ended) return;
        failure = `the response stream broke before the answer: ${errorText(error)}`;
      }
      if (this.ended || this.cancelled.delete(id)) return;
      if (lastEventId === undefined) break; // the server gave no event id: nothing to resume from
      empty = fresh ? 0 : empty + 1;
      if (empty === MAX_EMPTY_RESUMES) {
        failure += ` (resumed ${MAX_EMPTY_RESUMES} times in a row with no new event)`;
        break;
      }
      response = await this.reconnect(lastEventId, retryMs).catch((error: Error) => {
        failure += `; resuming it failed: ${errorText(error)}`;
        return undefined;
      });
      if (this.ended || this.cancelled.delete(id)) return;
    }
    if (!this.ended) {
      this.handlers?.onMessage({ jsonrpc: "2.0", id, error: { code: ErrorCode.ConnectionClosed, message: failure } });
    }
  }

  /**
   * After `waitMs` (at most `MAX_RETRY_MS`), a GET of the event stream, after event `lastEventId`
   * when given (the server replays what came after it). Rejects when it cannot be reached or does
   * not answer with an event stream (the error names the status).
   */
  private async reconnect(lastEventId: string | undefined, waitMs: number): Promise<Response> {
    await abortableSleep(Math.min(waitMs, MAX_RETRY_MS), this.streams.signal);
    const headers = await this.headers(false);
    if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
    // the GET stream may stay open for hours: its bound is per event (below), not on the whole
    const response = await this.fetch(
      this.params.url,
      { method: "GET", headers, signal: this.streams.signal },
      Number.POSITIVE_INFINITY,
    );
    if (!response.ok || !(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      await response.body?.cancel();
      throw new HttpStatusError(response.status);
    }
    const max = this.params.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const { status, statusText } = response;
    return new Response(boundedEvents(response.body!, max), { status, statusText, headers: response.headers });
  }

  /**
   * Opens the GET stream for messages the server starts; resolves once the server has answered
   * (the stream is then read, and opened again whenever it ends, in the background). A server
   * that offers none (405) is fine.
   */
  private async openGetStream(): Promise<void> {
    if (this.getStreamOpen || this.ended || this.sessionId === undefined) return;
    this.getStreamOpen = true;
    let response: Response;
    try {
      response = await this.reconnect(undefined, 0);
    } catch (error) {
      this.getStreamOpen = false;
      if (!this.ended && !(error instanceof HttpStatusError && error.status === 405))
        this.handlers?.onDiagnostic?.(`cannot open the GET event stream: ${errorText(error)}`);
      return;
    }
    void this.listen(response).finally(() => (this.getStreamOpen = false));
  }

  /** Reads the GET stream, and opens it again each time it ends, until the transport closes or the server says 405. */
  private async listen(first: Response): Promise<void> {
    let response: Response | undefined = first;
    let lastEventId: string | undefined;
    let retryMs = DEFAULT_RETRY_MS;
    let waitMs = retryMs;
    while (!this.ended) {
      let delivered = false;
      try {
        for await (const event of readSse(response!.body!)) {
          if (event.id !== undefined) lastEventId = event.id;
          if (event.retry !== undefined) retryMs = event.retry;
          const message = this.parse(event.data);
          if (message === undefined) continue;
          delivered = true;
          this.handlers?.onMessage(message);
        }
      } catch (error) {
        if (this.ended) return;
        this.handlers?.onDiagnostic?.(`the GET event stream broke: ${errorText(error)}; opening it again`);
      }
      for (;;) {
        waitMs = delivered ? retryMs : Math.min(waitMs * 2, MAX_RETRY_MS);
        delivered = false;
        try {
          response = await this.reconnect(lastEventId, waitMs);
          break;
        } catch (error) {
          if (this.ended) return;
          if (error instanceof HttpStatusError && error.status === 405) return; // no GET stream any more
        }
      }
    }
  }

  /** One SSE `data` as a message; the priming event (empty data) and non-messages are skipped. */
  private parse(data: string): JsonRpcMessage | undefined {
    if (data === "") return undefined;
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      this.handlers?.onDiagnostic?.(`dropped an event whose data is not JSON: ${JSON.stringify(data.slice(0, 200))}`);
      return undefined;
    }
    const message = readMessage(value);
    if (typeof message === "string") {
      this.handlers?.onDiagnostic?.(`dropped an event that is not JSON-RPC (${message})`);
      return undefined;
    }
    return message;
  }

  /**
   * Every request to the server, through the one outbound policy (`outboundFetch`): redirects
   * within the server's origin only (at most 5; never to another one, where the call, the session
   * id and the configured headers would go along), the body capped at `maxResponseBytes`, and a
   * request that carries `Authorization` (a bearer token) or any configured header (an API key, a
   * cookie) only over https, or http on a loopback host.
   */
  private fetch(
    url: string,
    init: RequestInit & { headers: Record<string, string> },
    maxBytes = this.params.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
  ): Promise<Response> {
    return outboundFetch(url, init, {
      what: "the MCP server",
      // a configured header is the user's (an API key, a cookie): a credential, as Authorization is
      secure:
        Object.keys(this.params.headers ?? {}).length > 0 ||
        Object.keys(init.headers).some((name) => name.toLowerCase() === "authorization"),
      maxRedirects: 5,
      maxBytes,
      ...(this.params.fetch !== undefined && { fetch: this.params.fetch }),
    });
  }
}

/**
 * `body` (an event stream that may stay open for hours) with a bound on each event instead of
 * on the whole: past `max` bytes without a blank line (the end of an event) the stream fails,
 * so an endless `data:` line, or `data:` lines that never end their event, cannot grow memory
 * without end.
 */
function boundedEvents(body: ReadableStream<Uint8Array>, max: number): ReadableStream<Uint8Array> {
  let since = 0; // bytes since the last blank line
  let previous = 0; // the last byte of the previous chunk: a blank line may straddle two chunks
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const after = afterLastBlankLine(chunk, previous);
        since = after === -1 ? since + chunk.length : chunk.length - after;
        if (chunk.length > 0) previous = chunk[chunk.length - 1]!;
        if (since > max) controller.error(new Error(`the server sent an event longer than ${max} bytes`));
        else controller.enqueue(chunk);
      },
    }),
  );
}

/** The index after the last blank line of `chunk` (`previous`: the byte before it), or -1. */
function afterLastBlankLine(chunk: Uint8Array, previous: number): number {
  const LF = 0x0a;
  const CR = 0x0d;
  for (let i = chunk.length - 1; i >= 0; i--) {
    const b = chunk[i]!;
    if (b !== LF && b !== CR) continue;
    const a = i > 0 ? chunk[i - 1]! : previous;
    // Two line ends in a row, except CR LF, which is one: LF LF, CR CR, LF CR.
    if ((a === LF || a === CR) && !(a === CR && b === LF)) return i + 1;
    if (a === CR && b === LF) {
      const z = i > 1 ? chunk[i - 2]! : i === 1 ? previous : -1;
      if (z === LF || z === CR) return i + 1; // CR LF after a line end: LF CR LF, CR CR LF
    }
  }
  return -1;
}

/** A GET answered with something other than an event stream. */
class HttpStatusError extends Error {
  constructor(readonly status: number) {
    super(`the server answered the GET with HTTP ${status}`);
  }
}

/** Resolves after `ms`; rejects at once when `signal` aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
