/**
 * JSON-RPC 2.0, the message layer of the Model Context Protocol: the four kinds of message, the
 * error codes MCP uses, and `readMessage`, which tells one parsed value apart as one of them.
 *
 * A request carries an `id` (a number or a string; `0` is an id like any other) and expects
 * exactly one response with the same id; a notification has no `id` and gets no answer. Both
 * sides send both kinds: a server asks the client for `roots/list` as the client asks it for
 * `tools/list`.
 */
import { PiCourseError } from "../base/errors.js";

/** A request id. Numbers start at 0 in every implementation seen; 0 is a valid id. */
export type JsonRpcId = number | string;

/** A call that expects one response with the same `id`. */
export interface JsonRpcRequest {
  jsonrpc: "2.0";
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

/** A one-way message: no `id`, no response. */
export interface JsonRpcNotification {
  jsonrpc: "2.0";
  method: string;
  params?: Record<string, unknown>;
}

/** The error object of a failed request. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** The answer to a request: `result` or `error`, never both. */
export type JsonRpcResponse =
  | { jsonrpc: "2.0"; id: JsonRpcId; result: Record<string, unknown> }
  | { jsonrpc: "2.0"; id: JsonRpcId | null; error: JsonRpcErrorObject };

/** Anything a peer sends. */
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Error codes: JSON-RPC's own and the ones MCP adds. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** MCP (SDK): the connection closed before the answer came. */
  ConnectionClosed: -32000,
  /** MCP (SDK): the request timed out (the SDK also uses it for aborts). */
  RequestTimeout: -32001,
  /** MCP 2025-11-25: the server needs the user to open a URL first. */
  UrlElicitationRequired: -32042,
} as const;

/**
 * Why an MCP request failed: the peer's JSON-RPC error (`kind: "remote"`, with its `code` and
 * `data`), or a local end: `timeout` (no answer in time), `aborted` (the caller's signal),
 * `closed` (the connection ended first; `message` says how), `protocol` (the peer broke the
 * protocol, e.g. an unsupported version), `transport` (the request could not be handed over: the
 * process is gone, or the HTTP POST failed; the connection may still serve other requests).
 */
export class McpError extends PiCourseError {
  override readonly name = "McpError";

  constructor(
    readonly kind: "remote" | "timeout" | "aborted" | "closed" | "protocol" | "transport",
    message: string,
    /** The JSON-RPC code (the peer's for `remote`; -32001 for timeout and abort, -32000 otherwise). */
    override readonly code: number = kind === "timeout" || kind === "aborted"
      ? ErrorCode.RequestTimeout
      : ErrorCode.ConnectionClosed,
    /** The peer's `error.data`, if any. */
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/**
 * Reads one parsed JSON value as a JSON-RPC message, or returns a short reason why it is not
 * one (for a diagnostic). Accepts any key order (servers write `{"result":…,"jsonrpc":"2.0","id":0}`).
 * Refuses: a non-object, a batch array, a missing or wrong `jsonrpc`, an `id` that is neither a
 * number nor a string (except `null` in an error response, which JSON-RPC allows), a request
 * without a string `method`, a response with neither or both of `result` and `error`.
 */
export function readMessage(value: unknown): JsonRpcMessage | string {
  // #region lab 17.1 readMessage
  if (typeof value !== "object" || value === null) return "not a JSON object";
  if (Array.isArray(value)) return "a batch (array); MCP sends one message per line";
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return 'no "jsonrpc": "2.0"';
  const id = message.id;
  const hasId = id !== undefined;
  if (hasId && typeof id !== "number" && typeof id !== "string" && !(id === null && "error" in message)) {
    return `an id that is neither a number nor a string (${JSON.stringify(id)})`;
  }
  if (typeof message.method === "string") {
    if (message.params !== undefined && (typeof message.params !== "object" || message.params === null)) {
      return "params that are not an object";
    }
    return message as unknown as JsonRpcRequest | JsonRpcNotification;
  }
  if (!hasId) return 'neither a "method" nor an "id"';
  const hasResult = "result" in message;
  const hasError = "error" in message;
  if (hasResult === hasError) return 'a response needs exactly one of "result" and "error"';
  if (hasError) {
    const error = message.error as Record<string, unknown> | null;
    if (
      typeof error !== "object" ||
      error === null ||
      typeof error.code !== "number" ||
      typeof error.message !== "string"
    ) {
      return 'an "error" without a numeric code and a message';
    }
  } else if (typeof message.result !== "object" || message.result === null) {
    return 'a "result" that is not an object';
  }
  return message as unknown as JsonRpcResponse;
  // #endregion
}

/** Is `message` a request (a method and an id)? */
export function isRequest(message: JsonRpcMessage): message is JsonRpcRequest {
  return "method" in message && "id" in message && message.id !== undefined;
}

/** Is `message` a notification (a method, no id)? */
export function isNotification(message: JsonRpcMessage): message is JsonRpcNotification {
  return "method" in message && !("id" in message && message.id !== undefined);
}
