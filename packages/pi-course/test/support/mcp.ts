/**
 * Helpers of the MCP tests: where the reference servers are, and a transport held in memory
 * whose "server" is a function of the test (for what no real server does on demand).
 */
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonRpcMessage } from "../../src/mcp/json-rpc.js";
import type { McpTransport, TransportHandlers } from "../../src/mcp/transport.js";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** The entry file of a reference server package (`server-everything`, `server-filesystem`). */
export function serverEntry(name: "server-everything" | "server-filesystem"): string {
  const pkg = require.resolve(`@modelcontextprotocol/${name}/package.json`, { paths: [here] });
  return path.join(path.dirname(pkg), "dist", "index.js");
}

/** The fault server of the tests (an SDK McpServer that misbehaves on purpose). */
export const FAULT_SERVER = path.join(here, "..", "fixtures", "mcp", "fault-server.mjs");

/** A transport whose peer is `serve`: it gets every message sent and may answer with `reply`. */
export class MemoryTransport implements McpTransport {
  readonly sent: JsonRpcMessage[] = [];
  handlers: TransportHandlers | undefined;
  closed = false;
  protocolVersion?: string;

  constructor(
    private readonly serve: (message: JsonRpcMessage, reply: (message: JsonRpcMessage) => void) => void = () => {},
  ) {}

  async start(handlers: TransportHandlers): Promise<void> {
    this.handlers = handlers;
  }

  async send(message: JsonRpcMessage): Promise<void> {
    if (this.closed) throw new Error("closed");
    this.sent.push(message);
    // answers arrive later, as from a real peer
    queueMicrotask(() => this.serve(message, (answer) => this.deliver(answer)));
  }

  /** Delivers a message from the "server". */
  deliver(message: JsonRpcMessage): void {
    if (!this.closed) this.handlers?.onMessage(message);
  }

  /** Ends the transport from the "server" side. */
  fail(error: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.handlers?.onClose(error);
  }

  async close(): Promise<void> {
    this.fail(new Error("closed"));
  }
}

/** The messages sent, without `jsonrpc` (for short exact assertions). */
export function wire(messages: readonly JsonRpcMessage[]): unknown[] {
  return messages.map(({ jsonrpc: _, ...rest }) => rest);
}

/** An MCP server with 25 tools (`city_weather` and 24 fillers), for the CLI's deferral of many MCP tools. */
export const MANY_TOOLS_SERVER = path.join(here, "..", "fixtures", "mcp", "many-tools-server.mjs");

/** An MCP server that answers only once the file its one argument names exists (`city_weather`), for servers that arrive mid-run. */
export const GATED_SERVER = path.join(here, "..", "fixtures", "mcp", "gated-server.mjs");
