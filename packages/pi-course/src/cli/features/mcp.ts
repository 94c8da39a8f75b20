/**
 * MCP on the command line: `--mcp-config FILE` (repeatable) besides `~/.pi-course/mcp.json`; the
 * project's own `.pi-course/mcp.json` passes the trust gate first (`projectFiles`, `afterTrust`).
 * On the runtime, the servers start last, in parallel and in the background: each is ready or
 * failed within its start-up timeout (`"startupTimeoutMs"` of its entry, else
 * `--mcp-startup-timeout`, else 30 s). The conversation does not wait for them: each server's
 * state is said as it changes, and its tools join when it is ready (the model has them from its
 * next request, also in a run already going: the runtime gives the agent `currentTools`). The
 * trace, print and JSON modes wait only for the servers whose tools the first request declares
 * (`"exposure": "direct"`, as pi waits for its direct servers; or reached through the code tool,
 * whose description lists them), each until it
 * settles within its own start-up timeout and at most `MCP_RUN_WAIT_MS` in all, then go on with a
 * note. Any other server still starting is noted, never waited for (issue 53: one that never
 * answers must not hold the first answer back): a `tool_search` that waits for it is in the run's
 * tools (waiting-tool-search.ts), and a call of one of its tools waits for it before the loop looks
 * the tool up. Their tools join the CLI's own (deferred behind `tool_search` above
 * `DEFER_MCP_TOOLS_ABOVE`) and follow later changes of a server's tool list; they stop at close.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { McpConfigError, loadMcpConfig, mcpVariables, type McpServerConfig } from "../../mcp/config.js";
import type { McpServerEntry, McpServers, McpServersOptions } from "../../mcp/servers.js";
import { elicitOnTerminal } from "../elicitation.js";
import { homeFolder, mcpAuthFolder } from "../settings.js";
import type { Runtime, RuntimePart } from "../runtime.js";
import { deferMcpTools } from "../tool-declaration.js";
import { type StartingServers, waitingToolSearch } from "../waiting-tool-search.js";
import { createToolSearchTool } from "../../tool-search/tool-search.js";
import type { AgentTool } from "../../types.js";
import { untrustedText } from "../terminal-text.js";
import { CliUsageError } from "../usage-error.js";
import type { CliFeature } from "./feature.js";

declare module "../run-options.js" {
  interface RunOptions {
    /**
     * The MCP servers to start: `~/.pi-course/mcp.json`, then the project's `.pi-course/mcp.json`
     * once the folder is trusted (main.ts adds it), then each `--mcp-config FILE` (later files
     * replace earlier servers of the same name). Empty or absent when none is configured.
     */
    mcpServers?: McpServerConfig[];
    /** What a person should know about the MCP configuration (a project file not read, and why). */
    mcpNotices?: string[];
    /** The `--mcp-config FILE`s, absolute, in order (read again with the project's file once it is trusted). */
    mcpConfigFiles?: string[];
    /** `--mcp-startup-timeout MS`: how long a server whose entry sets no `startupTimeoutMs` has to start. */
    mcpStartupTimeoutMs?: number;
    /** Where the OAuth tokens of remote servers are kept (`~/.pi-course/mcp-auth`; `mcp login` writes them). */
    mcpAuthFolder?: string;
  }
}

/** How long the trace, print and JSON modes wait for servers of `"exposure": "direct"` still starting: 10 s (as pi). */
export const MCP_RUN_WAIT_MS = 10_000;

/** The name of the search tool (`createToolSearchTool`'s). */
const TOOL_SEARCH = "tool_search";

export const mcp: CliFeature = {
  name: "mcp",
  options: [
    {
      name: "mcp-config",
      value: "FILE",
      section: "options",
      help: `start the MCP servers of FILE ({"mcpServers": {"NAME": {"command",
"args", "env", "cwd"} | {"url", "headers", "oauth"}}}, as other agents write it)
besides those of ~/.pi-course/mcp.json; repeatable, later files win.
Their tools are named mcp__NAME__TOOL; \${VAR} in "env" and "headers" is
read from the environment; /mcp shows each server's state. A project's
.pi-course/mcp.json starts only in a trusted folder (see Trust below)
With more than 20 MCP tools, they are deferred: the model finds them with
tool_search, and each is declared once found`,
    },
    {
      name: "mcp-startup-timeout",
      value: "MS",
      setting: "mcpStartupTimeoutMs",
      section: "options",
      help: `how long an MCP server has to start (default 30000; an entry's own
"startupTimeoutMs" wins). Servers start in the background: the
conversation never waits; --print, --json and the trace wait only for
servers whose tools the first request declares ("exposure": "direct"
or "codemode"), at most ${MCP_RUN_WAIT_MS / 1000} s; the tools of a server still
starting join the model's next request once it is ready, and
tool_search, or a call of one of its tools, waits for it`,
    },
  ],
  usage: `  npm start -- mcp add | list | get | remove …
                                              edit the MCP servers of ~/.pi-course/mcp.json or
                                              (--project) of .pi-course/mcp.json (mcp says how)
  npm start -- mcp login | logout NAME        authorize a remote MCP server that asks for it
                                              (OAuth in a browser), or forget its tokens
`,
  parse({ values, from, env, settings, blame }) {
    const timeout = settings.mcpStartupTimeoutMs?.value;
    const mcpStartupTimeoutMs = timeout === undefined ? undefined : /^[0-9]+$/.test(timeout) ? Number(timeout) : 0;
    if (mcpStartupTimeoutMs !== undefined && !(mcpStartupTimeoutMs > 0 && Number.isSafeInteger(mcpStartupTimeoutMs))) {
      throw new CliUsageError(
        `--mcp-startup-timeout must be a whole number of milliseconds above 0, got "${timeout}"${blame("mcpStartupTimeoutMs")}.`,
      );
    }
    const mcpConfigFiles = (values.get("mcp-config") ?? []).map((file) => path.resolve(from, String(file)));
    try {
      // The project's own .pi-course/mcp.json waits for the trust decision (main.ts); these files
      // are the user's, so they are read now and a bad one is a usage error.
      const found = loadMcpConfig({
        home: path.dirname(homeFolder(env)),
        projectTrusted: false,
        files: mcpConfigFiles,
        env,
      });
      return {
        mcpServers: found.servers,
        mcpNotices: found.notices,
        mcpConfigFiles,
        mcpAuthFolder: mcpAuthFolder(env),
        ...(wantsCodeTool(found.servers) && { codeToolWanted: true }),
        ...(mcpStartupTimeoutMs !== undefined && { mcpStartupTimeoutMs }),
      };
    } catch (error) {
      if (error instanceof McpConfigError) throw new CliUsageError(`${error.message}.`);
      throw error;
    }
  },
  commands: [
    {
      name: "mcp",
      help: "/mcp [reconnect [NAME]]  the MCP servers (starting, ready, exited or failed, and why; their stderr), or start them afresh",
      run: async ({ printer, runtime }, arg) => {
        const servers = runtime.part<McpPart>("mcp")?.servers;
        if (servers === undefined)
          return printer.line("no MCP servers are configured (see --mcp-config and ~/.pi-course/mcp.json)", "dim");
        const [verb, name, ...rest] = arg.split(/\s+/).filter((word) => word !== "");
        if (verb !== undefined && (verb !== "reconnect" || rest.length > 0))
          return printer.line("usage: /mcp, or /mcp reconnect [NAME]", "red");
        if (verb === "reconnect") {
          printer.line(
            `starting ${name === undefined ? "every MCP server" : `the MCP server ${shown(name)}`} afresh…`,
            "dim",
          );
          await servers.reconnect(name);
        }
        // names, reasons, stderr: the servers' and their configuration's words, through the guard
        for (const text of servers.describe(5, shown).split("\n")) printer.line(text);
      },
    },
  ],
  // The variables MCP configurations name as ${VAR} (a server's key) travel as the key does: the
  // agent's environment has no secret-looking variable, and only the server that names one gets it.
  handOver: (argv, env) => mcpVariables(argv, env, path.dirname(homeFolder(env))),
  // A project's MCP configuration starts programs: it passes the same gate as its extensions.
  projectFiles: (options) => [projectConfig(options.folder)].filter((file) => existsSync(file)),
  afterTrust(options, { trusted, files, env }) {
    if (!files.includes(projectConfig(options.folder))) return {};
    const found = loadMcpConfig({
      home: path.dirname(homeFolder(env)),
      project: options.folder,
      projectTrusted: trusted,
      untrustedReason: "the folder is not trusted (--approve trusts it for one run; the interactive mode asks)",
      files: options.mcpConfigFiles ?? [],
      env,
    });
    return {
      mcpServers: found.servers,
      mcpNotices: found.notices,
      ...(wantsCodeTool(found.servers) && { codeToolWanted: true }),
    };
  },
  promptSection({ mcpServers = [] }) {
    const servers = mcpServers.filter((server) => server.problem === undefined);
    if (servers.length === 0) return undefined;
    const how = {
      direct: "declared to you",
      search: "find them with tool_search",
      codemode: "call them from the code tool",
    };
    const lines = servers.map(
      (server) =>
        `- ${server.name}: tools named mcp__${server.name}__*${server.exposure === undefined ? "" : ` (${how[server.exposure]})`}`,
    );
    return `MCP servers (their tools join as each server starts):\n${lines.join("\n")}`;
  },
  setUp(runtime) {
    const part: McpPart = {
      servers: undefined,
      start: (notes) => startServers(runtime, part, notes),
      ready: async () => {
        await part.servers?.ready();
      },
      close: async () => {
        await part.servers?.close();
      },
    };
    return part;
  },
};

/** Whether a server's tools are reached only through the code tool (it needs to exist). */
function wantsCodeTool(servers: readonly McpServerConfig[]): boolean {
  return servers.some((server) => server.exposure === "codemode" && server.problem === undefined);
}

/** The project's own MCP configuration. */
function projectConfig(folder: string): string {
  return path.join(folder, ".pi-course", "mcp.json");
}

/** The MCP servers of a runtime (undefined when none is configured). */
interface McpPart extends RuntimePart {
  servers: McpServers | undefined;
}

/**
 * Starts the configured MCP servers in parallel, in the background; their tools join the
 * runtime's as each is ready. The conversation goes on at once; the other modes wait until every
 * server whose tools the first request declares has settled, at most `MCP_RUN_WAIT_MS` (never for
 * a server with `exposure: "search"`). What is settled by then goes to `notes` (the
 * banner); each later change is a notice (`runtime.onNotice`). A failed server is a note, never
 * a failed start.
 */
async function startServers(runtime: Runtime, part: McpPart, notes: (text: string) => void): Promise<void> {
  const { mcpNotices = [], mcpServers = [] } = runtime.options;
  for (const notice of mcpNotices) notes(notice);
  if (mcpServers.length === 0) return;
  const start = await prepareStart(runtime, part, mcpServers);
  const starting = startingServers(start);
  const servers = launchServers(start, starting);
  start.servers = servers;
  part.servers = servers;
  if (start.runs) {
    // the first request already has the waiting search while servers start
    publishTools(start, starting, servers.tools);
    waitForCalledServers(start, starting);
  }
  if (start.runs && start.declared.size > 0) await waitForDeclaredServers(start);
  start.banner = false;
  bannerNotes(start, notes);
}

/** What the steps of one `startServers` share. */
interface ServerStart {
  readonly runtime: Runtime;
  readonly part: McpPart;
  readonly configs: McpServerConfig[];
  readonly mcp: McpModules;
  /** A run (trace, print, JSON), which may wait for servers; not a conversation, which never does. */
  readonly runs: boolean;
  readonly codemode: boolean;
  /**
   * Servers a run waits for: their tools are declared in its first request, directly (their entry
   * says `"exposure": "direct"`) or in the code tool's description (`"codemode"`, or `--codemode`).
   */
  readonly declared: ReadonlySet<string>;
  /** Servers whose tools the model may search for (not reached through the code tool only). */
  readonly searchable: ReadonlySet<string>;
  /** The servers, once `launchServers` has started them. */
  servers: McpServers | undefined;
  /** Until `startServers` returns, what settles goes to the banner's notes, not to notices. */
  banner: boolean;
  /** The note on how the MCP tools are declared (deferred behind tool_search), as last said. */
  toolNote: string | undefined;
  /** The MCP tools as the run declares them (`deferMcpTools`), before the waiting search is put first. */
  exposed: AgentTool<any, any>[];
  /** Told each time a server settles (a run that waits for the declared servers listens). */
  settledOne: () => void;
  /** The servers' questions at the terminal, asked one at a time. */
  questions: Promise<unknown>;
}

/** The MCP modules, loaded only when a server is configured. */
async function loadMcpModules() {
  const { McpServers } = await import("../../mcp/servers.js");
  const { mcpToolName } = await import("../../mcp/mcp-tools.js");
  const { McpTokenStore } = await import("../../mcp/auth/token-store.js");
  const { oauthForServer } = await import("../../mcp/auth/server-auth.js");
  const { loginHint } = await import("../mcp-login.js");
  return { McpServers, mcpToolName, McpTokenStore, oauthForServer, loginHint };
}
type McpModules = Awaited<ReturnType<typeof loadMcpModules>>;

/** Loads the MCP modules and sorts the configured servers by what a run waits for. */
async function prepareStart(runtime: Runtime, part: McpPart, configs: McpServerConfig[]): Promise<ServerStart> {
  const mcp = await loadMcpModules();
  const codemode = runtime.options.codemode === true;
  const names = (keep: (exposure: McpServerConfig["exposure"]) => boolean) =>
    new Set(configs.filter((server) => keep(server.exposure)).map((server) => server.name));
  return {
    runtime,
    part,
    configs,
    mcp,
    runs: runtime.options.mode !== "interactive",
    codemode,
    declared: names(
      (exposure) => exposure === "direct" || exposure === "codemode" || (codemode && exposure === undefined),
    ),
    searchable: names(
      (exposure) => exposure === "direct" || exposure === "search" || (!codemode && exposure === undefined),
    ),
    servers: undefined,
    banner: true,
    toolNote: undefined,
    exposed: [],
    settledOne: () => {},
    questions: Promise.resolve(),
  };
}

/** In a run: the servers still starting that the waiting tool_search waits for. */
function startingServers(start: ServerStart): StartingServers {
  const servers = () => start.servers!;
  return {
    starting: () =>
      servers()
        .entries()
        .flatMap((e) => (start.searchable.has(e.name) && e.state.status === "starting" ? [e.name] : [])),
    settled: (names) => servers().settled(names),
    problem: (name) => {
      const state = servers()
        .entries()
        .find((entry) => entry.name === name)?.state;
      if (state === undefined || state.status === "ready" || state.status === "exited") return undefined;
      return state.status === "failed" ? shown(state.reason) : state.status;
    },
    directTools: (name) => {
      const names = new Set(servers().toolNames(name));
      return start.exposed
        .filter((tool) => names.has(tool.name) && (tool.exposure ?? "direct") === "direct")
        .map((t) => t.name);
    },
    search: () => (start.exposed[0]?.name === TOOL_SEARCH ? start.exposed[0] : undefined),
  };
}

/** Gives the runtime the MCP tools as they are now (the agent has them from its next request). */
function publishTools(start: ServerStart, starting: StartingServers, tools: readonly AgentTool<any, any>[]): void {
  const { runtime } = start;
  const added = deferMcpTools(tools, { codemode: start.codemode, servers: start.configs.map((server) => server.name) });
  if (added.note !== undefined && added.note !== start.toolNote && !start.banner) runtime.onNotice(added.note);
  start.toolNote = added.note;
  start.exposed = added.tools;
  const waitFor = start.runs ? starting.starting() : [];
  if (waitFor.length === 0) return runtime.setAddedTools(start.exposed);
  const search = starting.search();
  const deferred = start.exposed.filter((tool) => tool.exposure === "deferred").length;
  const rest = search === undefined ? start.exposed : start.exposed.slice(1);
  const waiting = waitingToolSearch(search ?? createToolSearchTool([]), starting, deferred);
  runtime.setAddedTools([waiting, ...rest]);
}

/** Starts every configured server in the background, wired to the runtime's terminal, notices and tools. */
function launchServers(start: ServerStart, starting: StartingServers): McpServers {
  const { runtime, part, mcp } = start;
  const { mcpStartupTimeoutMs } = runtime.options;
  const servers: McpServers = mcp.McpServers.start(start.configs, {
    root: runtime.workspace,
    reservedNames: runtime.agent.state.tools.map((tool) => tool.name),
    clientInfo: { name: "pi-course", version: "0.1.0" },
    onElicitation: (name, params, signal) => askAtTerminal(start, name, params, signal),
    elicitationModes: ["form", "url"],
    ...(mcpStartupTimeoutMs !== undefined && { startupTimeoutMs: mcpStartupTimeoutMs }),
    ...serverAuth(start),
    onToolsChanged: (tools) => publishTools(start, starting, tools),
    onStateChange: (name) => {
      start.settledOne();
      // the waiting search goes once no server it waits for is starting
      if (start.runs && part.servers !== undefined) publishTools(start, starting, servers.tools);
      if (start.banner) return;
      const entry = servers.entries().find((candidate) => candidate.name === name);
      const text = entry === undefined ? undefined : stateNote(entry);
      if (text !== undefined) runtime.onNotice(text);
    },
  });
  return servers;
}

/** A server's question, asked at the terminal, one at a time; where nobody can answer it, it is declined. */
function askAtTerminal(
  start: ServerStart,
  name: string,
  params: Parameters<NonNullable<McpServersOptions["onElicitation"]>>[1],
  signal: AbortSignal,
): ReturnType<NonNullable<McpServersOptions["onElicitation"]>> {
  const { runtime } = start;
  const person = runtime.questioner;
  if (person === undefined) {
    const asked = typeof params.message === "string" ? untrustedText(params.message, { max: 300 }) : "(no message)";
    runtime.onNotice(
      `MCP server ${shown(name)} asked for input ("${asked}"): declined (nobody can answer in this mode)`,
    );
    return Promise.resolve({ action: "decline" });
  }
  const answer = start.questions.then(() => elicitOnTerminal(person, name, params, signal));
  start.questions = answer.catch(() => undefined);
  return answer;
}

/** A remote server that asks for OAuth uses the tokens `mcp login` kept; without them it fails saying to log in. */
function serverAuth(start: ServerStart): Pick<McpServersOptions, "auth"> {
  const { mcpAuthFolder, mode } = start.runtime.options;
  const { mcp } = start;
  if (mcpAuthFolder === undefined) return {};
  return {
    auth: (config) =>
      mcp.oauthForServer(config, {
        store: new mcp.McpTokenStore(mcpAuthFolder),
        // in a conversation the server is started again once the person has logged in
        loginHint: (name) => `${mcp.loginHint(name)}${mode === "interactive" ? `, then /mcp reconnect ${name}` : ""}`,
      }),
  };
}

/**
 * In a run, a call of a tool of a server still starting waits for it (its start-up timeout bounds
 * it), before the loop looks the tool up: the tools that joined meanwhile are the run's (currentTools).
 */
function waitForCalledServers(start: ServerStart, starting: StartingServers): void {
  const { mcp } = start;
  start.runtime.agent.subscribe(async (event, signal) => {
    if (event.type !== "message_end" || event.message.role !== "assistant") return;
    const called = event.message.content.flatMap((block) => (block.type === "toolCall" ? [block.name] : []));
    const names = starting
      .starting()
      .filter((name) => called.some((tool) => tool.startsWith(mcp.mcpToolName(name, ""))));
    if (names.length === 0) return;
    const aborted = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    await Promise.race([start.servers!.settled(names), aborted]);
  });
}

/** Waits until each server whose tools the first request declares has settled (each within its own start-up timeout), at most `MCP_RUN_WAIT_MS`. */
async function waitForDeclaredServers(start: ServerStart): Promise<void> {
  const servers = start.servers!;
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, MCP_RUN_WAIT_MS)));
  const settled = new Promise<void>((resolve) => {
    start.settledOne = () => {
      if (!servers.entries().some((e) => start.declared.has(e.name) && e.state.status === "starting")) resolve();
    };
    start.settledOne();
  });
  await Promise.race([settled, waited]);
  clearTimeout(timer);
}

/** What the banner says of each server once start-up returns, and how the MCP tools are declared. */
function bannerNotes(start: ServerStart, notes: (text: string) => void): void {
  const { mode } = start.runtime.options;
  for (const entry of start.servers!.entries()) {
    const text = stateNote(entry);
    if (text !== undefined) notes(text);
    else if (entry.state.status === "starting") notes(startingNote(entry.name, mode, start.declared, start.searchable));
  }
  if (start.toolNote !== undefined) notes(start.toolNote);
}

/**
 * What a person is told of a server still starting when the run goes on: a conversation never
 * waits; a run waited for a server whose tools its first request declares (`declared`) up to `MCP_RUN_WAIT_MS`,
 * and for no other (a `searchable` one is found with tool_search, which waits for it).
 */
function startingNote(
  name: string,
  mode: string,
  declared: ReadonlySet<string>,
  searchable: ReadonlySet<string>,
): string {
  const server = `MCP server ${shown(name)}`;
  if (mode === "interactive") return `${server}: starting (its tools join when it is ready; /mcp shows it)`;
  const joins = `its tools join the model's next request once it is ready${searchable.has(name) ? "; tool_search waits for it" : ""}`;
  if (declared.has(name))
    return `${server}: still starting after ${MCP_RUN_WAIT_MS / 1000} s; the run goes on without it (${joins})`;
  return `${server}: starting; the run goes on without waiting for it (${joins})`;
}

/** What a person is told of a server that is ready, exited or failed (undefined while it starts). */
function stateNote(entry: McpServerEntry): string | undefined {
  const state = entry.state;
  const name = shown(entry.name);
  if (state.status === "ready") {
    const hidden =
      state.hidden.length > 0 ? ` (${state.hidden.length} hidden: ${state.hidden.map(shown).join("; ")})` : "";
    return `MCP server ${name}: ready with ${state.tools} tool${state.tools === 1 ? "" : "s"}${hidden}`;
  }
  if (state.status === "exited")
    return `MCP server ${name} exited: ${shown(state.reason)}; it starts again when one of its tools is called`;
  if (state.status === "failed") {
    const tail = entry.stderrTail.at(-1);
    return `MCP server ${name} failed: ${shown(state.reason)}${tail !== undefined && !state.reason.includes(tail) ? ` (stderr: ${shown(tail)})` : ""}`;
  }
  return undefined;
}

/** A text an MCP server or its configuration chose (a name, a reason, a stderr line), as the terminal shows it. */
function shown(text: string): string {
  return untrustedText(text, { max: 500 });
}
