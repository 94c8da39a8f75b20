/**
 * The configured MCP servers of one agent: started in parallel, each with a start-up timeout;
 * one that fails (cannot start, never answers, crashes later) does not stop the others or the
 * agent, it is `failed` with the reason. The tools of every ready server are agent tools
 * (`mcp-tools.ts`); when a server's tool list changes, `onToolsChanged` hears the new whole list.
 */
import { errorText } from "../errors.js";
import { pathToFileURL } from "node:url";
import type { TSchema } from "typebox";
import type { AgentTool } from "../types.js";
import { McpClient, type McpClientOptions, type McpToolInfo } from "./client.js";
import type { McpServerConfig } from "./config.js";
import { HttpTransport } from "./streamable-http.js";
import { mcpAgentTools, type McpToolDetails } from "./mcp-tools.js";
import { StdioTransport } from "./stdio-transport.js";

/** How long a server has to start when nothing says otherwise: 30 seconds. */
export const DEFAULT_MCP_STARTUP_TIMEOUT_MS = 30_000;

/** Where a server is in its life. */
export type McpServerState =
  | { status: "starting" }
  | { status: "ready"; tools: number; hidden: string[] }
  | { status: "failed"; reason: string }
  | { status: "closed" };

/** One server as `/mcp` shows it. */
export interface McpServerEntry {
  name: string;
  source: string;
  state: McpServerState;
  /** The last lines it wrote to stderr (stdio servers). */
  stderrTail: readonly string[];
  /** Its log messages and other notes. */
  diagnostics: readonly string[];
}

/** Options of `McpServers.start`. */
export interface McpServersOptions {
  /** The workspace root offered on `roots/list` (a folder path). */
  root?: string;
  /**
   * Milliseconds a server has to answer `initialize` and `tools/list` when its configuration
   * sets none (`McpServerConfig.startupTimeoutMs`). Default `DEFAULT_MCP_STARTUP_TIMEOUT_MS`.
   */
  startupTimeoutMs?: number;
  /** Names the agent's own tools use, so no MCP tool takes one. */
  reservedNames?: readonly string[];
  /** Hears the whole MCP tool list whenever it changes (a server became ready, failed, or re-listed). */
  onToolsChanged?: (tools: AgentTool<TSchema, McpToolDetails>[]) => void;
  /** Hears a change of any server's state (for notices). */
  onStateChange?: (name: string, state: McpServerState) => void;
  clientInfo?: McpClientOptions["clientInfo"];
  /** Stdio shutdown grace (ms between stdin close, SIGTERM and SIGKILL; default 2,000). */
  graceMs?: number;
}

interface Running {
  config: McpServerConfig;
  state: McpServerState;
  client?: McpClient;
  tools: McpToolInfo[];
}

/** The servers of one agent. `start` returns at once; `ready()` waits for every start to settle. */
export class McpServers {
  private readonly running: Running[];
  private readonly starting: Promise<void>;
  private toolList: AgentTool<TSchema, McpToolDetails>[] = [];

  private constructor(
    configs: readonly McpServerConfig[],
    private readonly options: McpServersOptions,
  ) {
    this.running = configs.map((config) => ({ config, state: { status: "starting" }, tools: [] }));
    this.starting = Promise.all(this.running.map((server) => this.startOne(server))).then(() => {});
  }

  /** Starts every server in parallel (a server with a `problem` fails at once). */
  static start(configs: readonly McpServerConfig[], options: McpServersOptions = {}): McpServers {
    return new McpServers(configs, options);
  }

  /** Resolves once every server is ready or failed (never rejects). */
  ready(): Promise<void> {
    return this.starting;
  }

  /** The agent tools of every ready server, in configuration order. */
  get tools(): AgentTool<TSchema, McpToolDetails>[] {
    return this.toolList;
  }

  /** Every server with its state, stderr tail and diagnostics. */
  entries(): McpServerEntry[] {
    return this.running.map(({ config, state, client }) => ({
      name: config.name,
      source: config.source,
      state,
      stderrTail: client?.transport.stderrTail ?? [],
      diagnostics: client?.diagnostics ?? [],
    }));
  }

  /** What `/mcp` prints: one line per server, then its stderr tail (up to `tailLines` lines). */
  describe(tailLines = 5): string {
    if (this.running.length === 0) return "no MCP servers are configured (see --mcp-config and ~/.pi-course/mcp.json)";
    const lines: string[] = [];
    for (const entry of this.entries()) {
      const state = entry.state;
      const what =
        state.status === "ready"
          ? `ready with ${state.tools} tool${state.tools === 1 ? "" : "s"}${state.hidden.length > 0 ? ` (${state.hidden.length} hidden: ${state.hidden.join("; ")})` : ""}`
          : state.status === "failed"
            ? `failed: ${state.reason}`
            : state.status;
      lines.push(`${entry.name}: ${what}`);
      // a tab would indent by the terminal's tab stops: each line under the same "  stderr: " column
      for (const line of entry.stderrTail.slice(-tailLines))
        lines.push(`  stderr: ${line.replace(/\t/g, "  ").trimEnd()}`);
    }
    return lines.join("\n");
  }

  /** Ends every server (in parallel); resolves when all have exited. */
  async close(): Promise<void> {
    await Promise.all(
      this.running.map(async (server) => {
        const client = server.client;
        server.state = { status: "closed" };
        await client?.close().catch(() => {});
      }),
    );
    this.rebuild();
  }

  private async startOne(server: Running): Promise<void> {
    const { config } = server;
    if (config.problem !== undefined || config.transport === undefined) {
      this.setState(server, { status: "failed", reason: config.problem ?? "no transport" });
      return;
    }
    const { kind, ...params } = config.transport;
    const transport =
      kind === "stdio"
        ? new StdioTransport({
            ...(params as ConstructorParameters<typeof StdioTransport>[0]),
            ...(this.options.graceMs !== undefined && { graceMs: this.options.graceMs }),
          })
        : new HttpTransport(params as ConstructorParameters<typeof HttpTransport>[0]);
    const root = this.options.root;
    const client = new McpClient(transport, {
      ...(this.options.clientInfo !== undefined && { clientInfo: this.options.clientInfo }),
      ...(root !== undefined && { roots: [{ uri: pathToFileURL(root).href, name: "workspace" }] }),
      onToolsChanged: (tools) => {
        if (server.state.status !== "ready") return;
        server.tools = tools;
        this.rebuild();
      },
    });
    server.client = client;
    const timeoutMs = config.startupTimeoutMs ?? this.options.startupTimeoutMs ?? DEFAULT_MCP_STARTUP_TIMEOUT_MS;
    try {
      const started = Date.now();
      await client.connect({ timeoutMs });
      server.tools = await client.listTools({ timeoutMs: Math.max(1, timeoutMs - (Date.now() - started)) });
    } catch (error) {
      const reason = errorText(error);
      this.setState(server, { status: "failed", reason });
      await client.close().catch(() => {});
      return;
    }
    if (server.state.status === "closed") return;
    client.connection.onClose((error) => {
      if (server.state.status !== "ready") return;
      this.setState(server, { status: "failed", reason: error.message });
      this.rebuild();
    });
    server.state = { status: "ready", tools: 0, hidden: [] };
    this.rebuild(); // counts the tools
    this.options.onStateChange?.(config.name, server.state);
  }

  private setState(server: Running, state: McpServerState): void {
    if (server.state.status === "closed") return;
    server.state = state;
    this.options.onStateChange?.(server.config.name, state);
  }

  /** The tool list from every ready server, names unique across servers and the agent's own. */
  private rebuild(): void {
    const taken = new Set(this.options.reservedNames ?? []);
    const all: AgentTool<TSchema, McpToolDetails>[] = [];
    for (const server of this.running) {
      if (server.state.status !== "ready" || server.client === undefined) continue;
      const { tools, hidden, notes } = mcpAgentTools(server.config.name, server.client, server.tools, taken);
      server.state.tools = tools.length;
      server.state.hidden = hidden;
      const diagnostics = server.client.diagnostics;
      for (const note of notes) if (!diagnostics.includes(note)) diagnostics.push(note);
      all.push(...tools);
    }
    this.toolList = all;
    this.options.onToolsChanged?.(all);
  }
}
