/**
 * The configured MCP servers of one agent: started in parallel, each with a start-up timeout;
 * one that fails (cannot start, never answers) does not stop the others or the agent, it is
 * `failed` with the reason. The tools of every ready server are agent tools (`mcp-tools.ts`);
 * when a server's tool list changes, `onToolsChanged` hears the new whole list.
 *
 * A ready server whose connection ends (its process exited) is `exited`: its tools stay, and the
 * next call of one starts it again, at most `MAX_RESTARTS` times; then it is `failed` until
 * `reconnect` starts it afresh.
 */
import { errorText } from "../base/errors.js";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { TSchema } from "typebox";
import type { AgentTool } from "../types.js";
import { McpClient, type McpClientOptions, type McpToolInfo } from "./client.js";
import type { HttpAuth } from "./auth/http-auth.js";
import type { McpServerConfig } from "./config.js";
import { HttpTransport } from "./streamable-http.js";
import { mcpAgentTools, type McpToolDetails } from "./mcp-tools.js";
import { StdioTransport } from "./stdio-transport.js";

/** How long a server has to start when nothing says otherwise: 30 seconds. */
export const DEFAULT_MCP_STARTUP_TIMEOUT_MS = 30_000;

/** A server's `exposure` as its tools carry it. */
const EXPOSURE = { direct: "direct", search: "deferred", codemode: "codemode" } as const;

/** How many times a server that exited is started again on use before it stays failed: 3. */
export const MAX_RESTARTS = 3;

/** Where a server is in its life. */
export type McpServerState =
  | { status: "starting" }
  | { status: "ready"; tools: number; hidden: string[] }
  | { status: "exited"; reason: string; tools: number; hidden: string[] }
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
  /** Answers a server's `elicitation/create` (`name`: the server); absent: servers cannot ask. */
  onElicitation?: (
    name: string,
    params: Record<string, unknown>,
    signal: AbortSignal,
  ) => Promise<Record<string, unknown>>;
  /** The elicitation modes `onElicitation` answers (`McpClientOptions.elicitationModes`). */
  elicitationModes?: McpClientOptions["elicitationModes"];
  /** Stdio shutdown grace (ms between stdin close, SIGTERM and SIGKILL; default 2,000). */
  graceMs?: number;
  /**
   * The authorization of a remote server (`McpOAuth`, or any `HttpAuth`), asked once per
   * start of each Streamable HTTP server; undefined: none (static `headers` only).
   */
  auth?: (config: McpServerConfig) => HttpAuth | undefined;
}

interface Running {
  config: McpServerConfig;
  state: McpServerState;
  client?: McpClient;
  tools: McpToolInfo[];
  /** Times it was started again after it exited (reset by `reconnect`). */
  restarts: number;
  /** The start in progress after it exited, shared by the calls that wait for it. */
  restarting?: Promise<void>;
  /** Its latest start (the first, or one after it exited or a reconnect): settles when it is ready or failed. */
  settling: Promise<void>;
}

/** The servers of one agent. `start` returns at once; `ready()` waits for every start to settle. */
export class McpServers {
  private readonly running: Running[];
  private readonly starting: Promise<void>;
  private toolList: AgentTool<TSchema, McpToolDetails>[] = [];
  private namesByServer = new Map<string, string[]>();

  private constructor(
    configs: readonly McpServerConfig[],
    private readonly options: McpServersOptions,
  ) {
    this.running = configs.map((config) => {
      const server: Running = {
        config,
        state: { status: "starting" },
        tools: [],
        restarts: 0,
        settling: Promise.resolve(),
      };
      return server;
    });
    this.starting = Promise.all(this.running.map((server) => (server.settling = this.startOne(server)))).then(() => {});
  }

  /** Starts every server in parallel (a server with a `problem` fails at once). */
  static start(configs: readonly McpServerConfig[], options: McpServersOptions = {}): McpServers {
    return new McpServers(configs, options);
  }

  /** Resolves once every server is ready or failed (never rejects). */
  ready(): Promise<void> {
    return this.starting;
  }

  /**
   * Resolves once each server named in `names` (every server when absent) is no longer starting:
   * ready, exited, failed or closed. Each start is bounded by the server's start-up timeout, so
   * this settles within the longest of theirs (never rejects; an unknown name is skipped).
   */
  async settled(names?: readonly string[]): Promise<void> {
    for (const server of this.running) {
      if (names !== undefined && !names.includes(server.config.name)) continue;
      // a reconnect may start it again meanwhile: wait for the start in progress, once each
      for (let seen: Promise<void> | undefined; server.state.status === "starting" && seen !== server.settling; ) {
        seen = server.settling;
        await seen;
      }
    }
  }

  /** The agent tools of every ready server, in configuration order. */
  get tools(): AgentTool<TSchema, McpToolDetails>[] {
    return this.toolList;
  }

  /** The names of the agent tools of the server named `name` (none while it is not ready). */
  toolNames(name: string): string[] {
    return this.namesByServer.get(name) ?? [];
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

  /**
   * What `/mcp` prints: one line per server, then its stderr tail (up to `tailLines` lines).
   * Every text a server or its configuration chose (its name, a reason it failed, its hidden
   * tools, its roots, its stderr) is put through `show` first: a front end passes its terminal
   * guard (the CLI: `untrustedText`); the default shows them as they are.
   */
  describe(tailLines = 5, show: (text: string) => string = (text) => text): string {
    if (this.running.length === 0) return "no MCP servers are configured (see --mcp-config and ~/.pi-course/mcp.json)";
    const lines: string[] = [];
    for (const entry of this.entries()) {
      const state = entry.state;
      const hidden = (names: string[]) =>
        names.length > 0 ? ` (${names.length} hidden: ${names.map(show).join("; ")})` : "";
      const what =
        state.status === "ready"
          ? `ready with ${state.tools} tool${state.tools === 1 ? "" : "s"}${hidden(state.hidden)}`
          : state.status === "exited"
            ? `exited: ${show(state.reason)}; starts again when one of its tools is called (${MAX_RESTARTS - this.restartsOf(entry.name)} of ${MAX_RESTARTS} restarts left)`
            : state.status === "failed"
              ? `failed: ${show(state.reason)}`
              : state.status;
      lines.push(`${show(entry.name)}: ${what}`);
      const { config } = this.running.find((server) => server.config.name === entry.name)!;
      const roots = this.rootsOf(config);
      // what it was offered on roots/list (nothing said when nothing could be: no workspace given)
      if (roots !== undefined) lines.push(`  roots: ${roots.map((root) => show(root.folder)).join(", ")}`);
      else if (config.roots === false) lines.push('  roots: none ("roots": false)');
      // a tab would indent by the terminal's tab stops: each line under the same "  stderr: " column
      for (const line of entry.stderrTail.slice(-tailLines))
        lines.push(`  stderr: ${show(line.replace(/\t/g, "  ").trimEnd())}`);
    }
    return lines.join("\n");
  }

  /**
   * Starts the server named `name` (every server when undefined) afresh: its connection, if any,
   * is closed, its restarts are counted from 0 again. Resolves when each is ready or failed.
   */
  async reconnect(name?: string): Promise<void> {
    const chosen = this.running.filter((server) => name === undefined || server.config.name === name);
    if (chosen.length === 0) throw new Error(`no MCP server is named "${name}"`);
    await Promise.all(
      chosen.map(async (server) => {
        await server.restarting;
        if (server.state.status === "closed") return;
        server.restarts = 0;
        await this.startAgain(server);
      }),
    );
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
        : new HttpTransport({
            ...(params as ConstructorParameters<typeof HttpTransport>[0]),
            ...this.authOf(config),
          });
    const roots = this.rootsOf(config);
    const client = new McpClient(transport, {
      ...(this.options.clientInfo !== undefined && { clientInfo: this.options.clientInfo }),
      ...(this.options.onElicitation !== undefined && {
        onElicitation: (params, signal) => this.options.onElicitation!(config.name, params, signal),
      }),
      ...(this.options.elicitationModes !== undefined && { elicitationModes: this.options.elicitationModes }),
      ...(roots !== undefined && {
        roots: roots.map(({ folder, name }) => ({ uri: pathToFileURL(folder).href, name })),
      }),
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
      if (server.state.status !== "ready" || server.client !== client) return;
      if (server.restarts >= MAX_RESTARTS) {
        const reason = `${error.message} (started again ${MAX_RESTARTS} times; /mcp reconnect starts it afresh)`;
        this.setState(server, { status: "failed", reason });
        this.rebuild();
        return;
      }
      // its tools stay: the next call starts it again
      const { tools, hidden } = server.state;
      this.setState(server, { status: "exited", reason: error.message, tools, hidden });
    });
    server.state = { status: "ready", tools: 0, hidden: [] };
    this.rebuild(); // counts the tools
    this.options.onStateChange?.(config.name, server.state);
  }

  /** Closes `server`'s connection, if any, and starts it again (the state says how it went). */
  private startAgain(server: Running): Promise<void> {
    const old = server.client;
    server.client = undefined;
    this.setState(server, { status: "starting" });
    this.rebuild();
    server.settling = (async () => {
      await old?.close().catch(() => {});
      await this.startOne(server);
    })();
    return server.settling;
  }

  /** The folders offered to `config`'s server on `roots/list`: its own `roots`, else the workspace; undefined: none. */
  private rootsOf(config: McpServerConfig): { folder: string; name: string }[] | undefined {
    if (config.roots === false) return undefined;
    if (config.roots !== undefined) return config.roots.map((folder) => ({ folder, name: path.basename(folder) }));
    const root = this.options.root;
    return root === undefined ? undefined : [{ folder: root, name: "workspace" }];
  }

  /** `{ auth }` for `config`'s transport, when the options give one. */
  private authOf(config: McpServerConfig): { auth?: HttpAuth } {
    const auth = this.options.auth?.(config);
    return auth === undefined ? {} : { auth };
  }

  /** The client of `server`, started again first if it exited; throws when it cannot run. */
  private async clientOf(server: Running): Promise<McpClient> {
    if (server.state.status === "exited" && server.restarting === undefined) {
      server.restarts++;
      server.restarting = this.startAgain(server).finally(() => (server.restarting = undefined));
    }
    await server.restarting;
    const state = server.state;
    if (state.status === "ready" && server.client !== undefined) return server.client;
    const why = state.status === "failed" ? state.reason : state.status;
    throw new Error(`the MCP server ${server.config.name} is not running: ${why}`);
  }

  private restartsOf(name: string): number {
    return this.running.find((server) => server.config.name === name)?.restarts ?? 0;
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
    const names = new Map<string, string[]>();
    for (const server of this.running) {
      const { state, client } = server;
      if ((state.status !== "ready" && state.status !== "exited") || client === undefined) continue;
      // the entry's "toolTimeoutMs" bounds each call in all: its silence and the progress that would prolong it
      const limit = server.config.toolTimeoutMs;
      const caller: Pick<McpClient, "callTool"> = {
        callTool: async (name, args, options = {}) =>
          (await this.clientOf(server)).callTool(name, args, {
            ...(limit !== undefined && { timeoutMs: limit, maxTotalMs: limit }),
            ...options,
          }),
      };
      const { includeTools, excludeTools, exposure } = server.config;
      const chosen = server.tools.filter(
        (info) => (includeTools?.includes(info.name) ?? true) && !excludeTools?.includes(info.name),
      );
      const { tools, hidden, notes } = mcpAgentTools(server.config.name, caller, chosen, taken);
      if (exposure !== undefined) for (const tool of tools) tool.exposure = EXPOSURE[exposure];
      state.tools = tools.length;
      state.hidden = hidden;
      for (const note of notes) if (!client.diagnostics.includes(note)) client.diagnostics.push(note);
      all.push(...tools);
      names.set(
        server.config.name,
        tools.map((tool) => tool.name),
      );
    }
    this.toolList = all;
    this.namesByServer = names;
    this.options.onToolsChanged?.(all);
  }
}
