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
import type { McpServerEntry, McpServers } from "../../mcp/servers.js";
import { elicitOnTerminal } from "../elicitation.js";
import { mcpAuthFolder } from "../mcp-login.js";
import { homeFolder } from "../settings.js";
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
  const { mcpNotices = [], mcpServers = [], mcpStartupTimeoutMs, mode } = runtime.options;
  for (const notice of mcpNotices) notes(notice);
  if (mcpServers.length === 0) return;
  const { McpServers } = await import("../../mcp/servers.js");
  const { mcpToolName } = await import("../../mcp/mcp-tools.js");
  const { McpTokenStore } = await import("../../mcp/auth/token-store.js");
  const { oauthForServer } = await import("../../mcp/auth/server-auth.js");
  const { loginHint } = await import("../mcp-login.js");
  const { mcpAuthFolder } = runtime.options;
  let toolNote: string | undefined;
  let questions: Promise<unknown> = Promise.resolve();
  let banner = true; // until start returns, what settles goes to the banner's notes
  const runs = mode !== "interactive";
  const codemode = runtime.options.codemode === true;
  /**
   * Servers a run waits for: their tools are declared in its first request, directly (their entry
   * says `"exposure": "direct"`) or in the code tool's description (`"codemode"`, or `--codemode`).
   */
  const declared = new Set(
    mcpServers
      .filter(
        (server) =>
          server.exposure === "direct" || server.exposure === "codemode" || (codemode && server.exposure === undefined),
      )
      .map((server) => server.name),
  );
  /** Servers whose tools the model may search for (not reached through the code tool only). */
  const searchable = new Set(
    mcpServers
      .filter(
        (server) =>
          server.exposure === "direct" || server.exposure === "search" || (!codemode && server.exposure === undefined),
      )
      .map((server) => server.name),
  );
  let settledOne = (): void => {};
  /** In a run: the servers still starting that the waiting tool_search waits for. */
  const starting: StartingServers = {
    starting: () =>
      servers.entries().flatMap((e) => (searchable.has(e.name) && e.state.status === "starting" ? [e.name] : [])),
    settled: (names) => servers.settled(names),
    problem: (name) => {
      const state = servers.entries().find((entry) => entry.name === name)?.state;
      if (state === undefined || state.status === "ready" || state.status === "exited") return undefined;
      return state.status === "failed" ? shown(state.reason) : state.status;
    },
    directTools: (name) => {
      const names = new Set(servers.toolNames(name));
      return exposed
        .filter((tool) => names.has(tool.name) && (tool.exposure ?? "direct") === "direct")
        .map((t) => t.name);
    },
    search: () => (exposed[0]?.name === TOOL_SEARCH ? exposed[0] : undefined),
  };
  /** The MCP tools as the run declares them (`deferMcpTools`), before the waiting search is put first. */
  let exposed: AgentTool<any, any>[] = [];
  /** Gives the runtime the MCP tools as they are now (the agent has them from its next request). */
  const publish = (tools: readonly AgentTool<any, any>[]): void => {
    const added = deferMcpTools(tools, { codemode, servers: mcpServers.map((server) => server.name) });
    if (added.note !== undefined && added.note !== toolNote && !banner) runtime.onNotice(added.note);
    toolNote = added.note;
    exposed = added.tools;
    const waitFor = runs ? starting.starting() : [];
    if (waitFor.length === 0) return runtime.setAddedTools(exposed);
    const search = starting.search();
    const deferred = exposed.filter((tool) => tool.exposure === "deferred").length;
    const rest = search === undefined ? exposed : exposed.slice(1);
    const waiting = waitingToolSearch(search ?? createToolSearchTool([]), starting, deferred);
    runtime.setAddedTools([waiting, ...rest]);
  };
  const servers = McpServers.start(mcpServers, {
    root: runtime.workspace,
    reservedNames: runtime.agent.state.tools.map((tool) => tool.name),
    clientInfo: { name: "pi-course", version: "0.1.0" },
    // a server's question is asked at the terminal, one at a time; where nobody can answer it is declined
    onElicitation: (name, params, signal) => {
      const person = runtime.questioner;
      if (person === undefined) {
        const asked = typeof params.message === "string" ? untrustedText(params.message, { max: 300 }) : "(no message)";
        runtime.onNotice(
          `MCP server ${shown(name)} asked for input ("${asked}"): declined (nobody can answer in this mode)`,
        );
        return Promise.resolve({ action: "decline" });
      }
      const answer = questions.then(() => elicitOnTerminal(person, name, params, signal));
      questions = answer.catch(() => undefined);
      return answer;
    },
    elicitationModes: ["form", "url"],
    ...(mcpStartupTimeoutMs !== undefined && { startupTimeoutMs: mcpStartupTimeoutMs }),
    // a remote server that asks for OAuth uses the tokens `mcp login` kept; without them it fails saying to log in
    ...(mcpAuthFolder !== undefined && {
      auth: (config) =>
        oauthForServer(config, {
          store: new McpTokenStore(mcpAuthFolder),
          // in a conversation the server is started again once the person has logged in
          loginHint: (name) => `${loginHint(name)}${mode === "interactive" ? `, then /mcp reconnect ${name}` : ""}`,
        }),
    }),
    onToolsChanged: publish,
    onStateChange: (name) => {
      settledOne();
      // the waiting search goes once no server it waits for is starting
      if (runs && part.servers !== undefined) publish(servers.tools);
      if (banner) return;
      const entry = servers.entries().find((candidate) => candidate.name === name);
      const text = entry === undefined ? undefined : stateNote(entry);
      if (text !== undefined) runtime.onNotice(text);
    },
  });
  part.servers = servers;
  if (runs) {
    // the first request already has the waiting search while servers start
    publish(servers.tools);
    // a call of a tool of a server still starting waits for it (its start-up timeout bounds it),
    // before the loop looks the tool up: the tools that joined meanwhile are the run's (currentTools)
    runtime.agent.subscribe(async (event, signal) => {
      if (event.type !== "message_end" || event.message.role !== "assistant") return;
      const called = event.message.content.flatMap((block) => (block.type === "toolCall" ? [block.name] : []));
      const names = starting.starting().filter((name) => called.some((tool) => tool.startsWith(mcpToolName(name, ""))));
      if (names.length === 0) return;
      const aborted = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      await Promise.race([servers.settled(names), aborted]);
    });
  }
  if (runs && declared.size > 0) {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, MCP_RUN_WAIT_MS)));
    // each server that is waited for settles within its own start-up timeout
    const settled = new Promise<void>((resolve) => {
      settledOne = () => {
        if (!servers.entries().some((e) => declared.has(e.name) && e.state.status === "starting")) resolve();
      };
      settledOne();
    });
    await Promise.race([settled, waited]);
    clearTimeout(timer);
  }
  banner = false;
  for (const entry of servers.entries()) {
    const text = stateNote(entry);
    if (text !== undefined) notes(text);
    else if (entry.state.status === "starting") notes(startingNote(entry.name, mode, declared, searchable));
  }
  if (toolNote !== undefined) notes(toolNote);
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
