/**
 * One JSON-RPC connection over a transport: requests out with their answers correlated by id,
 * notifications both ways, requests from the peer answered by handlers.
 *
 * Every request ends exactly once: its response, the peer's error, a timeout, the caller's
 * abort, or the end of the transport. A request that ends locally (timeout, abort) tells the
 * peer with `notifications/cancelled`; what the peer still sends for it (a late response,
 * progress) is ignored. Nothing is left pending when the transport ends.
 */
import { errorText } from "../base/errors.js";
import { startTimer, userDuration } from "../base/timer.js";
import { OutboundError } from "../models/http/outbound.js";
import { McpAuthError } from "./auth/auth-error.js";
import {
  ErrorCode,
  McpError,
  isNotification,
  isRequest,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from "./json-rpc.js";
import type { McpTransport } from "./transport.js";

/** `notifications/progress` as the caller of a request sees it. */
export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

/** Options of one request. */
export interface RequestOptions {
  /** Aborting it ends the request with an `aborted` `McpError` and cancels it at the peer. */
  signal?: AbortSignal;
  /** Milliseconds without an answer (or, with `onProgress`, without progress) before it times out. */
  timeoutMs?: number;
  /**
   * Hears the peer's progress; giving it sends `_meta.progressToken` (the request id) and makes
   * each progress notification restart the timeout.
   */
  onProgress?: (progress: Progress) => void;
  /**
   * With `onProgress`: the most the request may take in all, however often progress restarts
   * its timeout (default ten times `timeoutMs`), so a server that reports progress for ever
   * cannot keep a call open for ever.
   */
  maxTotalMs?: number;
}

/** Answers one request from the peer; `signal` fires if the peer cancels it. */
export type RequestHandler = (
  params: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<Record<string, unknown>> | Record<string, unknown>;

/** The default request timeout: 60 s, as the official SDK. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

interface Pending {
  method: string;
  resolve(result: Record<string, unknown>): void;
  reject(error: McpError): void;
  onProgress?: (progress: Progress) => void;
  restartTimer(): void;
  cleanup(): void;
}

/** A JSON-RPC peer on one transport. Call `start()` once before anything else. */
export class JsonRpcConnection {
  private nextId = 0;
  private readonly pending = new Map<JsonRpcId, Pending>();
  private readonly requestHandlers = new Map<string, RequestHandler>();
  private readonly notificationHandlers = new Map<string, (params: Record<string, unknown>) => void>();
  /** Peer requests being answered, by id, so a `notifications/cancelled` can abort them. */
  private readonly incoming = new Map<JsonRpcId, AbortController>();
  private closedWith: Error | undefined;
  private readonly closeListeners: ((error: Error) => void)[] = [];

  constructor(
    readonly transport: McpTransport,
    private readonly defaultTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
    private readonly onDiagnostic: (text: string) => void = () => {},
  ) {
    // The peer may ping us at any time; cancellation of the peer's own requests is ours to honour.
    this.requestHandlers.set("ping", () => ({}));
    this.notificationHandlers.set("notifications/cancelled", (params) => {
      this.incoming.get(params.requestId as JsonRpcId)?.abort(params.reason ?? "cancelled by the server");
    });
    this.notificationHandlers.set("notifications/progress", (params) => this.progress(params));
  }

  /** Starts the transport; rejects if it cannot start. */
  async start(): Promise<void> {
    await this.transport.start({
      onMessage: (message) => this.receive(message),
      onClose: (error) => this.closed(error),
      onDiagnostic: this.onDiagnostic,
    });
  }

  /** Why the connection ended, once it has. */
  get closeReason(): Error | undefined {
    return this.closedWith;
  }

  /** Hears the end of the connection (once). */
  onClose(listener: (error: Error) => void): void {
    if (this.closedWith !== undefined) listener(this.closedWith);
    else this.closeListeners.push(listener);
  }

  /** Answers the peer's requests for `method` (replacing any earlier handler). */
  setRequestHandler(method: string, handler: RequestHandler): void {
    this.requestHandlers.set(method, handler);
  }

  /** Hears the peer's notifications for `method`. */
  setNotificationHandler(method: string, handler: (params: Record<string, unknown>) => void): void {
    this.notificationHandlers.set(method, handler);
  }

  /**
   * Sends a request and resolves with its `result`. Rejects with an `McpError`: `remote` (the
   * peer's error), `timeout`, `aborted` or `closed`. Never stays pending once the transport ends.
   */
  request(
    method: string,
    params: Record<string, unknown> = {},
    options: RequestOptions = {},
  ): Promise<Record<string, unknown>> {
    // #region lab 17.2 JsonRpcConnection.request
    if (this.closedWith !== undefined) {
      return Promise.reject(
        new McpError("closed", `cannot send ${method}: the connection is closed (${this.closedWith.message})`),
      );
    }
    const { signal, onProgress } = options;
    if (signal?.aborted) return Promise.reject(new McpError("aborted", `${method} was aborted before it was sent`));
    const id = this.nextId++;
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const maxTotalMs = options.maxTotalMs ?? timeoutMs * 10;
    let limit: number | undefined; // undefined: past a timer's reach, no limit
    let totalLimit: number | undefined;
    try {
      limit = userDuration(timeoutMs, `the timeout of ${method} (timeoutMs)`);
      if (onProgress !== undefined) totalLimit = userDuration(maxTotalMs, `the total time of ${method} (maxTotalMs)`);
    } catch (error) {
      return Promise.reject(error);
    }
    const message: JsonRpcRequest = { jsonrpc: "2.0", id, method, params };
    if (onProgress !== undefined)
      message.params = { ...params, _meta: { ...(params._meta as object), progressToken: id } };
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let totalTimer: ReturnType<typeof setTimeout> | undefined;
      const end = (reason: string, error: McpError) => {
        if (!this.pending.delete(id)) return;
        entry.cleanup();
        reject(error);
        // the peer stops work on it; a late answer is ignored (no longer pending)
        this.notify("notifications/cancelled", { requestId: id, reason }).catch(() => {});
      };
      const onAbort = () => {
        const reason = typeof signal!.reason === "string" ? signal!.reason : "the caller aborted the request";
        end(reason, new McpError("aborted", `${method} was aborted: ${reason}`));
      };
      const entry: Pending = {
        method,
        resolve,
        reject,
        ...(onProgress !== undefined && { onProgress }),
        restartTimer: () => {
          if (timer !== undefined) clearTimeout(timer);
          timer = startTimer(() => {
            const text = `${method} timed out: no answer within ${timeoutMs} ms`;
            end(`Request timed out after ${timeoutMs} ms`, new McpError("timeout", text));
          }, limit);
          timer?.unref();
        },
        cleanup: () => {
          if (timer !== undefined) clearTimeout(timer);
          if (totalTimer !== undefined) clearTimeout(totalTimer);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      this.pending.set(id, entry);
      entry.restartTimer();
      if (onProgress !== undefined) {
        totalTimer = startTimer(() => {
          const text = `${method} timed out: no answer within ${maxTotalMs} ms in all, though progress kept coming`;
          end(`Request timed out after ${maxTotalMs} ms in all`, new McpError("timeout", text));
        }, totalLimit);
        totalTimer?.unref();
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.transport.send(message).catch((error: Error) => {
        if (!this.pending.delete(id)) return; // ended already (closed() ends every pending request)
        entry.cleanup();
        reject(sendFailure(method, error));
      });
    });
    // #endregion
  }

  /** Sends a notification; rejects if the transport cannot take it. */
  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    if (this.closedWith !== undefined) throw new McpError("closed", `cannot send ${method}: the connection is closed`);
    const message: JsonRpcNotification =
      params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params };
    await this.transport.send(message);
  }

  /** Closes the transport; pending requests end with a `closed` error. */
  async close(): Promise<void> {
    await this.transport.close();
    this.closed(new Error("the connection was closed"));
  }

  /** One message from the peer. */
  private receive(message: JsonRpcMessage): void {
    // #region lab 17.2 JsonRpcConnection.receive
    if (isRequest(message)) {
      void this.answer(message);
      return;
    }
    if (isNotification(message)) {
      const handler = this.notificationHandlers.get(message.method);
      if (handler === undefined) return; // unknown notifications are ignored, as the spec says
      try {
        handler(message.params ?? {});
      } catch (error) {
        this.onDiagnostic(`the handler of ${message.method} failed: ${errorText(error)}`);
      }
      return;
    }
    const id = message.id;
    const entry = id === null ? undefined : this.pending.get(id);
    if (entry === undefined) return; // a stray or late answer (cancelled, timed out, duplicate)
    this.pending.delete(id!);
    entry.cleanup();
    if ("error" in message) {
      const { code, message: text, data } = message.error;
      entry.reject(new McpError("remote", `${entry.method} failed: MCP error ${code}: ${text}`, code, data));
    } else entry.resolve(message.result);
    // #endregion
  }

  private progress(params: Record<string, unknown>): void {
    const entry = this.pending.get(params.progressToken as JsonRpcId);
    if (entry?.onProgress === undefined) return; // not ours any more (cancelled, done)
    entry.restartTimer();
    const progress: Progress = { progress: Number(params.progress) };
    if (typeof params.total === "number") progress.total = params.total;
    if (typeof params.message === "string") progress.message = params.message;
    entry.onProgress(progress);
  }

  /** Answers a request of the peer: its handler's result, or a JSON-RPC error. */
  private async answer(request: JsonRpcRequest): Promise<void> {
    const handler = this.requestHandlers.get(request.method);
    let response: JsonRpcMessage;
    if (handler === undefined) {
      response = {
        jsonrpc: "2.0",
        id: request.id,
        error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${request.method}` },
      };
    } else {
      const controller = new AbortController();
      this.incoming.set(request.id, controller);
      try {
        const result = await handler(request.params ?? {}, controller.signal);
        response = { jsonrpc: "2.0", id: request.id, result };
      } catch (error) {
        const code = error instanceof McpError && error.kind === "remote" ? error.code : ErrorCode.InternalError;
        response = {
          jsonrpc: "2.0",
          id: request.id,
          error: { code, message: (error as Error)?.message ?? String(error) },
        };
      } finally {
        this.incoming.delete(request.id);
      }
      if (controller.signal.aborted) return; // cancelled by the peer: no answer, as the spec says
    }
    if (this.closedWith !== undefined) return;
    this.transport
      .send(response)
      .catch((error: Error) => this.onDiagnostic(`could not answer ${request.method}: ${error.message}`));
  }

  private closed(error: Error): void {
    if (this.closedWith !== undefined) return;
    this.closedWith = error;
    for (const [id, entry] of this.pending) {
      this.pending.delete(id);
      entry.cleanup();
      entry.reject(new McpError("closed", `${entry.method} failed: ${error.message}`));
    }
    for (const controller of this.incoming.values()) controller.abort("the connection closed");
    for (const listener of this.closeListeners.splice(0)) listener(error);
  }
}

/**
 * What a request whose transport could not send it rejects with: an authorization error or an
 * outbound policy refusal as it is (`McpAuthError` with its `failure`, server and what to do;
 * `OutboundError` with its `reason`), anything else as an `McpError` ("transport").
 */
function sendFailure(method: string, error: Error): Error {
  if (error instanceof McpAuthError || error instanceof OutboundError) return error;
  return new McpError("transport", `cannot send ${method}: ${error.message}`);
}
