/**
 * What carries JSON-RPC messages between the client and one server: stdio (a child process,
 * `stdio-transport.ts`) or Streamable HTTP (`streamable-http.ts`). The connection
 * (`connection.ts`) sees only this interface.
 */
import type { JsonRpcMessage } from "./json-rpc.js";

/** Where a transport delivers what it receives. */
export interface TransportHandlers {
  /** One message from the server, in the order received. */
  onMessage(message: JsonRpcMessage): void;
  /**
   * The transport has ended, for good: `error` says why (a crash, a spawn failure, a broken
   * stream, an HTTP error, or "closed" after `close()`). Called exactly once.
   */
  onClose(error: Error): void;
  /** Something worth keeping that is not a message (a dropped line, an HTTP oddity). */
  onDiagnostic?(text: string): void;
}

/**
 * Contract: `start` is called once, before any `send`; it resolves when messages can be sent
 * (the process is spawned, or nothing is needed for HTTP) and rejects if that fails.
 * `send` rejects when the message cannot be handed over (the transport has closed, or an HTTP
 * POST failed); a transport whose failure ends it calls `onClose` as well. `close` ends the
 * transport and resolves when it has (the process has exited; the HTTP session is deleted);
 * it may be called any number of times.
 */
export interface McpTransport {
  start(handlers: TransportHandlers): Promise<void>;
  send(message: JsonRpcMessage): Promise<void>;
  close(): Promise<void>;
  /** Set by the client after `initialize`: HTTP sends it as `mcp-protocol-version`. */
  protocolVersion?: string;
  /** What the transport can say about the server beyond messages (stderr tail for stdio). */
  readonly stderrTail?: readonly string[];
}
