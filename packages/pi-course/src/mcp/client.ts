/**
 * An MCP client for one server: the lifecycle (`initialize`, `notifications/initialized`, `ping`,
 * `close`), tools (`tools/list` with pagination, `tools/call` with progress, cancellation and a
 * timeout, re-listing on `notifications/tools/list_changed`), and the server's requests
 * (`roots/list`; `sampling/createMessage` and `elicitation/create` only with the application's
 * handler, else JSON-RPC -32601) and log messages (kept as diagnostics).
 */
import { DEFAULT_REQUEST_TIMEOUT_MS, JsonRpcConnection, type Progress } from "./connection.js";
import { ErrorCode, McpError } from "./json-rpc.js";
import type { McpTransport } from "./transport.js";

/** The protocol version offered: the newest. */
export const LATEST_PROTOCOL_VERSION = "2025-11-25";

/** The versions accepted in the server's answer: those the official SDK 1.32 supports. */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];

/** A tool as `tools/list` describes it. */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  /** A JSON Schema object for the arguments. */
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  /** `taskSupport: "required"` tools cannot be called without task augmentation (not supported here). */
  execution?: { taskSupport?: "forbidden" | "optional" | "required" };
}

/** A block of a tool result, as MCP sends it. */
export type McpContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name?: string; description?: string; mimeType?: string };

/** What `tools/call` returns. */
export interface McpCallResult {
  content: McpContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A root the client offers (`roots/list`). */
export interface McpRoot {
  uri: string;
  name?: string;
}

/** Options of a client. */
export interface McpClientOptions {
  /** Sent as `clientInfo`. */
  clientInfo?: { name: string; version: string };
  /** Offered on `roots/list` (the capability `roots` is advertised when given). */
  roots?: McpRoot[];
  /** Answers `sampling/createMessage`; without it the request is refused with -32601. */
  onSampling?: (params: Record<string, unknown>, signal: AbortSignal) => Promise<Record<string, unknown>>;
  /**
   * Answers `elicitation/create`; without it the request is refused with -32601. An accepted
   * answer is given the requested schema's defaults for the fields it leaves out
   * (`withElicitationDefaults`), as the specification asks of a client.
   */
  onElicitation?: (params: Record<string, unknown>, signal: AbortSignal) => Promise<Record<string, unknown>>;
  /**
   * The elicitation modes `onElicitation` answers (advertised as the `elicitation` capability):
   * `form` (fields of a schema) and `url` (a page the person opens). Default: form only.
   */
  elicitationModes?: readonly ("form" | "url")[];
  /** Default request timeout (60 s). */
  requestTimeoutMs?: number;
  /** Hears the tool list after a `list_changed` (debounced by `listChangedDelayMs`, default 100 ms). */
  onToolsChanged?: (tools: McpToolInfo[]) => void;
  listChangedDelayMs?: number;
  /** Hears diagnostics: server log messages, dropped input, failures of a re-list. */
  onDiagnostic?: (text: string) => void;
}

/** What `initialize` told about the server. */
export interface McpServerInfo {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  serverInfo: { name: string; version: string; title?: string };
  instructions?: string;
}

/** The most JSON a server's tool list may hold over all its pages: 16 Mi characters. */
export const MAX_TOOL_LIST_CHARS = 16 * 1024 * 1024;

/** Why `tool` (one item of `tools/list`) is not a tool, or undefined. */
function toolProblem(tool: unknown): string | undefined {
  if (typeof tool !== "object" || tool === null || Array.isArray(tool)) return "is not an object";
  const { name, inputSchema, description } = tool as Record<string, unknown>;
  if (typeof name !== "string" || name === "") return "has no name (a non-empty string)";
  if (
    inputSchema !== undefined &&
    (typeof inputSchema !== "object" || inputSchema === null || Array.isArray(inputSchema))
  )
    return `${JSON.stringify(name).slice(0, 80)} has an inputSchema that is not an object`;
  if (description !== undefined && typeof description !== "string")
    return `${JSON.stringify(name).slice(0, 80)} has a description that is not a string`;
  return undefined;
}

/** One MCP server, seen from the client. */
export class McpClient {
  readonly connection: JsonRpcConnection;
  /** Set by `connect()`. */
  server: McpServerInfo | undefined;
  /** Server log messages and other notes, newest last (at most 100). */
  readonly diagnostics: string[] = [];
  private listTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly transport: McpTransport,
    private readonly options: McpClientOptions = {},
  ) {
    this.connection = new JsonRpcConnection(transport, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, (text) =>
      this.note(text),
    );
    const roots = options.roots;
    if (roots !== undefined) this.connection.setRequestHandler("roots/list", () => ({ roots }));
    if (options.onSampling !== undefined)
      this.connection.setRequestHandler("sampling/createMessage", options.onSampling);
    const elicit = options.onElicitation;
    if (elicit !== undefined)
      this.connection.setRequestHandler("elicitation/create", async (params, signal) =>
        withElicitationDefaults(params, await elicit(params, signal)),
      );
    this.connection.setNotificationHandler("notifications/message", (params) => {
      const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data);
      this.note(`[${String(params.level)}]${typeof params.logger === "string" ? ` ${params.logger}:` : ""} ${data}`);
    });
    this.connection.setNotificationHandler("notifications/tools/list_changed", () => this.toolsChanged());
  }

  /**
   * Starts the transport and runs the handshake: `initialize` offering `LATEST_PROTOCOL_VERSION`,
   * then `notifications/initialized`. Rejects (and closes the transport) if the server answers
   * with a version not in `SUPPORTED_PROTOCOL_VERSIONS`, fails, or says nothing within
   * `timeoutMs` (default: the request timeout).
   */
  async connect(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<McpServerInfo> {
    // #region lab 17.3 McpClient.connect
    await this.connection.start();
    try {
      const capabilities: Record<string, unknown> = {};
      if (this.options.roots !== undefined) capabilities.roots = { listChanged: true };
      if (this.options.onSampling !== undefined) capabilities.sampling = {};
      if (this.options.onElicitation !== undefined)
        capabilities.elicitation = Object.fromEntries((this.options.elicitationModes ?? ["form"]).map((m) => [m, {}]));
      const result = await this.connection.request(
        "initialize",
        {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities,
          clientInfo: this.options.clientInfo ?? { name: "pi-course", version: "0.1.0" },
        },
        {
          ...(options.signal !== undefined && { signal: options.signal }),
          ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
        },
      );
      const version = result.protocolVersion;
      if (typeof version !== "string" || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        throw new McpError(
          "protocol",
          `the server answered initialize with protocol version ${JSON.stringify(version)}, which this client does not support ` +
            `(supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")}); upgrade the server or the client`,
          ErrorCode.InvalidRequest,
        );
      }
      this.server = result as unknown as McpServerInfo;
      this.transport.protocolVersion = version;
      await this.connection.notify("notifications/initialized");
      return this.server;
    } catch (error) {
      await this.connection.close().catch(() => {});
      throw error;
    }
    // #endregion
  }

  /**
   * Every tool of the server: `tools/list`, following `nextCursor` until there is none. A list
   * with a tool that is not one (no string name, a schema that is not an object), or longer than
   * `MAX_TOOL_LIST_CHARS` of JSON over all its pages, is a protocol error: that server fails alone.
   */
  async listTools(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    let size = 0;
    for (let page = 0; page < 1000; page++) {
      const result = await this.connection.request("tools/list", cursor === undefined ? {} : { cursor }, options);
      if (!Array.isArray(result.tools))
        throw new McpError("protocol", "tools/list answered without a tools array", ErrorCode.InvalidRequest);
      for (const tool of result.tools as unknown[]) {
        const problem = toolProblem(tool);
        if (problem !== undefined)
          throw new McpError("protocol", `tools/list: tool ${tools.length} ${problem}`, ErrorCode.InvalidRequest);
        tools.push(tool as McpToolInfo);
      }
      size += JSON.stringify(result.tools).length;
      if (size > MAX_TOOL_LIST_CHARS)
        throw new McpError(
          "protocol",
          `tools/list gave more than ${MAX_TOOL_LIST_CHARS} characters of tools (over ${page + 1} pages)`,
          ErrorCode.InvalidRequest,
        );
      if (typeof result.nextCursor !== "string" || result.nextCursor === "") return tools;
      if (result.nextCursor === cursor)
        throw new McpError("protocol", "tools/list returned the same cursor twice", ErrorCode.InvalidRequest);
      cursor = result.nextCursor;
    }
    throw new McpError("protocol", "tools/list gave more than 1000 pages", ErrorCode.InvalidRequest);
  }

  /**
   * Calls a tool. A tool's own failure is a result with `isError: true` (as servers send it);
   * a rejection is an `McpError`: the server's JSON-RPC error, a timeout (reset by progress),
   * an abort (the server is told with `notifications/cancelled`), or the end of the connection.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: {
      signal?: AbortSignal;
      timeoutMs?: number;
      maxTotalMs?: number;
      onProgress?: (progress: Progress) => void;
    } = {},
  ): Promise<McpCallResult> {
    const result = await this.connection.request("tools/call", { name, arguments: args }, options);
    if (!Array.isArray(result.content))
      throw new McpError(
        "protocol",
        `tools/call of ${name} answered without a content array`,
        ErrorCode.InvalidRequest,
      );
    return result as unknown as McpCallResult;
  }

  /** `ping`: resolves when the server answers. */
  async ping(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
    await this.connection.request("ping", {}, options);
  }

  /** Ends the connection (and, for stdio, the process). */
  async close(): Promise<void> {
    if (this.listTimer !== undefined) clearTimeout(this.listTimer);
    await this.connection.close();
  }

  /** Servers send several list_changed in a row (one per tool they register): re-list once. */
  private toolsChanged(): void {
    const listener = this.options.onToolsChanged;
    if (listener === undefined) return;
    if (this.listTimer !== undefined) clearTimeout(this.listTimer);
    this.listTimer = setTimeout(() => {
      this.listTimer = undefined;
      this.listTools().then(listener, (error: Error) => this.note(`re-listing the tools failed: ${error.message}`));
    }, this.options.listChangedDelayMs ?? 100);
    this.listTimer.unref?.();
  }

  private note(text: string): void {
    this.diagnostics.push(text);
    if (this.diagnostics.length > 100) this.diagnostics.shift();
    this.options.onDiagnostic?.(text);
  }
}

/**
 * `answer` to an `elicitation/create` request with `params`: when it accepts a form, each field of
 * `params.requestedSchema` with a `default` that `answer.content` leaves out gets that default.
 * Anything else is returned as it is.
 */
export function withElicitationDefaults(
  params: Record<string, unknown>,
  answer: Record<string, unknown>,
): Record<string, unknown> {
  const schema = params.requestedSchema as { properties?: unknown } | undefined;
  const properties = schema?.properties;
  if (answer.action !== "accept" || typeof properties !== "object" || properties === null) return answer;
  const given = typeof answer.content === "object" && answer.content !== null ? answer.content : {};
  const content: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(properties as Record<string, unknown>)) {
    if (typeof field === "object" && field !== null && "default" in field && !(name in given))
      content[name] = (field as { default: unknown }).default;
  }
  return { ...answer, content: { ...content, ...given } };
}
