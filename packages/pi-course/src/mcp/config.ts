/**
 * MCP server configuration as users already write it for other agents:
 *
 * ```json
 * { "mcpServers": {
 *     "fs":  { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": { "KEY": "${MY_KEY}" } },
 *     "web": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${WEB_TOKEN}" } } } }
 * ```
 *
 * Files, later ones replacing earlier servers of the same name: the user's
 * `~/.pi-course/mcp.json`, the project's `.pi-course/mcp.json` (only in a trusted folder: a
 * cloned repository must not start programs by being opened), then each `--mcp-config FILE`.
 * `${VAR}` (and `${VAR:-default}`) in `env` and `headers` values is taken from the environment,
 * so keys stay out of the file.
 *
 * A file that cannot be read as such a configuration is an error naming the file. A server whose
 * entry is wrong (no command nor url, a variable that is not set) is kept with its `problem`:
 * it fails alone, the agent and the other servers go on.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { Type } from "typebox";
import { errorText } from "../base/errors.js";
import { type JsonPlace, parseJson, readTextFile } from "../base/read-json.js";
import { type McpOAuthSettings, readOAuthSettings } from "./auth/oauth-settings.js";
import type { HttpServerParameters } from "./streamable-http.js";
import type { StdioServerParameters } from "./stdio-transport.js";
import { PiCourseError } from "../base/errors.js";

/** One configured server: how to reach it, or why it cannot be started. */
export interface McpServerConfig {
  /** Its name in `mcpServers` (tools are named `mcp__<name>__<tool>`). */
  name: string;
  /** The file it came from. */
  source: string;
  /** How to reach it; absent when `problem` is set. */
  transport?: ({ kind: "stdio" } & StdioServerParameters) | ({ kind: "http" } & HttpServerParameters);
  /** Why it cannot be started, for a person. */
  problem?: string;
  /** `"startupTimeoutMs"` of its entry: how long it has to answer `initialize` and `tools/list`. */
  startupTimeoutMs?: number;
  /**
   * `"toolTimeoutMs"` of its entry: the most one call of its tools may take, in all, progress or
   * not (Codex's `tool_timeout_sec`, Claude Code's `MCP_TOOL_TIMEOUT`, per server). Absent: a
   * call ends after 60 s without a word, and progress keeps it going for at most 10 minutes.
   */
  toolTimeoutMs?: number;
  /**
   * `"roots"` of its entry: `false` offers it no roots (it keeps the folders of its own
   * arguments), a list of folders (absolute, or relative to the file) offers those instead of
   * the workspace. Absent: the workspace.
   */
  roots?: false | string[];
  /**
   * `"exposure"` of its entry: how the model reaches its tools. `direct`: declared on every
   * request; `search`: found with `tool_search`; `codemode`: called from the `code` tool's
   * scripts only. Absent: the agent decides (direct up to a number of tools, then search; with
   * codemode on, through the code tool).
   */
  exposure?: McpExposure;
  /** `"includeTools"`: only these of its tools (their names as the server gives them). */
  includeTools?: string[];
  /** `"excludeTools"`: none of these of its tools. */
  excludeTools?: string[];
  /** `"oauth"` of a remote server's entry (`McpOAuthSettings`); false: no authorization. */
  oauth?: McpOAuthSettings | false;
}

/** How the model reaches an MCP server's tools (see `McpServerConfig.exposure`). */
export type McpExposure = "direct" | "search" | "codemode";

/** The fields of an entry besides its transport, as `serverEntry` reads them. */
type EntryOptions = Pick<
  McpServerConfig,
  "startupTimeoutMs" | "toolTimeoutMs" | "roots" | "exposure" | "includeTools" | "excludeTools" | "oauth"
>;

const SHAPE = '{"mcpServers": {"NAME": {"command": …} | {"url": …}}}';

/** What an `mcp.json` holds; each server entry is checked apart (a wrong one fails alone). */
const McpFileSchema = Type.Object(
  { mcpServers: Type.Record(Type.String(), Type.Unknown()) },
  { expected: `a JSON object with an "mcpServers" object: ${SHAPE}` },
);

/** `file` as read-json names it; a text that is not JSON gets the advice to fix or remove it. */
function mcpPlace(file: string): JsonPlace {
  return {
    where: file,
    error: (message, failure) =>
      new McpConfigError(failure === "not-json" ? `${message}; fix it or remove it` : message),
  };
}

/** A configuration file that cannot be used; the message names the file and what to fix. */
export class McpConfigError extends PiCourseError {
  override readonly name = "McpConfigError";
  /** Stable: `"MCP_CONFIG"`. */
  override readonly code = "MCP_CONFIG";
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in `text` with the environment's values. Throws an
 * `Error` naming the first variable that is not set (an empty value counts as set) and has no
 * default. `$` not followed by `{` is left as it is.
 */
export function expandVariables(text: string, env: Readonly<Record<string, string | undefined>>): string {
  // #region lab 17.5 expandVariables
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined) return value;
      if (fallback !== undefined) return fallback;
      throw new Error(`\${${name}} is not set in the environment`);
    },
  );
  // #endregion
}

/**
 * Reads one `mcp.json` text (`file` names it in messages; relative `cwd`s are resolved against
 * its folder). Throws `McpConfigError` when the text is not JSON or not `{"mcpServers": {…}}`;
 * a wrong server entry is returned with its `problem`.
 */
export function parseMcpConfig(
  text: string,
  file: string,
  env: Readonly<Record<string, string | undefined>>,
): McpServerConfig[] {
  // #region lab 17.5 parseMcpConfig
  const { mcpServers } = parseJson(text, McpFileSchema, mcpPlace(file));
  const out: McpServerConfig[] = [];
  for (const [name, entry] of Object.entries(mcpServers)) {
    const at = { name, source: file };
    try {
      const config = serverEntry(entry, path.dirname(file), env);
      if (config !== undefined) out.push({ ...at, ...config });
    } catch (error) {
      out.push({ ...at, problem: `server "${name}" in ${file}: ${errorText(error)}` });
    }
  }
  return out;
  // #endregion
}

/**
 * One entry of `mcpServers`: its transport and the options it sets (`startupTimeoutMs`, `toolTimeoutMs`, `roots`,
 * `exposure`, `includeTools`, `excludeTools`); undefined for `"disabled": true` or
 * `"enabled": false`. Throws with what is wrong.
 */
function serverEntry(
  entry: unknown,
  folder: string,
  env: Readonly<Record<string, string | undefined>>,
): (Pick<McpServerConfig, "transport"> & EntryOptions) | undefined {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw new Error("must be an object");
  const e = entry as Record<string, unknown>;
  if (e.disabled === true || e.enabled === false) return undefined;
  const transport = transportOf(e, folder, env);
  const options = entryOptions(e, folder);
  if (e.oauth !== undefined) {
    if (transport?.kind !== "http") throw new Error('"oauth" goes with "url" (a stdio server takes its keys in "env")');
    options.oauth = readOAuthSettings(e.oauth, (text) => expandVariables(text, env));
  }
  return { transport, ...options };
}

/** The options of an entry besides its transport. Throws with what is wrong. */
function entryOptions(e: Record<string, unknown>, folder: string): EntryOptions {
  const out: EntryOptions = {};
  for (const field of ["startupTimeoutMs", "toolTimeoutMs"] as const) {
    const timeout = e[field];
    if (timeout === undefined) continue;
    if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout <= 0)
      throw new Error(`"${field}" must be a whole number of milliseconds above 0, got ${JSON.stringify(timeout)}`);
    out[field] = timeout; // past a timer's reach it means no limit (userDuration, where the timer starts)
  }
  const roots = e.roots;
  if (roots !== undefined) {
    if (roots !== false && !isNameList(roots))
      throw new Error('"roots" must be false (offer none) or a list of folders');
    out.roots = roots === false ? false : roots.map((root) => path.resolve(folder, root));
  }
  const exposure = e.exposure;
  if (exposure !== undefined) {
    if (exposure !== "direct" && exposure !== "search" && exposure !== "codemode")
      throw new Error(`"exposure" must be "direct", "search" or "codemode", got ${JSON.stringify(exposure)}`);
    out.exposure = exposure;
  }
  for (const field of ["includeTools", "excludeTools"] as const) {
    const names = e[field];
    if (names === undefined) continue;
    if (!isNameList(names)) throw new Error(`"${field}" must be a list of tool names`);
    out[field] = names;
  }
  return out;
}

function isNameList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string" && item !== "");
}

/** How an entry is reached: `command` (stdio) or `url` (Streamable HTTP). Throws with what is wrong. */
function transportOf(
  e: Record<string, unknown>,
  folder: string,
  env: Readonly<Record<string, string | undefined>>,
): McpServerConfig["transport"] {
  const type = e.type;
  if (type === "sse")
    throw new Error(
      'the old HTTP+SSE transport ("type": "sse") is not supported; use the server\'s Streamable HTTP endpoint',
    );
  if (typeof e.command === "string" && e.command !== "") {
    if (type !== undefined && type !== "stdio")
      throw new Error(`"type": ${JSON.stringify(type)} does not go with "command"`);
    const args = e.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string"))
      throw new Error('"args" must be an array of strings');
    const config: McpServerConfig["transport"] = { kind: "stdio", command: e.command, args };
    if (e.env !== undefined) config.env = expandRecord(e.env, "env", env);
    if (e.cwd !== undefined) {
      if (typeof e.cwd !== "string") throw new Error('"cwd" must be a string');
      config.cwd = path.resolve(folder, e.cwd);
    }
    return config;
  }
  if (typeof e.url === "string" && e.url !== "") {
    if (type !== undefined && type !== "http" && type !== "streamable-http" && type !== "streamableHttp") {
      throw new Error(`"type": ${JSON.stringify(type)} does not go with "url" (use "http")`);
    }
    let url: URL;
    try {
      url = new URL(e.url);
    } catch {
      throw new Error(`"url" is not a URL: ${JSON.stringify(e.url)}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`"url" must be http or https: ${e.url}`);
    const config: McpServerConfig["transport"] = { kind: "http", url: e.url };
    if (e.headers !== undefined) config.headers = expandRecord(e.headers, "headers", env);
    return config;
  }
  throw new Error('needs "command" (a program to start) or "url" (a Streamable HTTP endpoint)');
}

function expandRecord(
  value: unknown,
  field: string,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error(`"${field}" must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [key, text] of Object.entries(value)) {
    if (typeof text !== "string") throw new Error(`"${field}.${key}" must be a string`);
    try {
      out[key] = expandVariables(text, env);
    } catch (error) {
      throw new Error(`"${field}.${key}": ${errorText(error)}`);
    }
  }
  return out;
}

/** Where `loadMcpConfig` looks. */
export interface McpConfigSources {
  /** The user's home: `~/.pi-course/mcp.json` is read if it exists. */
  home: string;
  /** The project folder: `.pi-course/mcp.json` there is read only when `projectTrusted`. */
  project?: string;
  /**
   * The trust decision for the project folder (`isTrusted` / `decideTrust`), made by the caller. False:
   * the project's file is not read, and a notice says so.
   */
  projectTrusted: boolean;
  /** Why the folder is not trusted, for the notice (default: "the folder is not trusted"). */
  untrustedReason?: string;
  /** `--mcp-config FILE`s, in order; each must exist. */
  files?: string[];
  env: Readonly<Record<string, string | undefined>>;
}

/**
 * Every configured server, later files replacing earlier servers of the same name, and the
 * notices a person should see (a project file that was not read, and why). Throws
 * `McpConfigError` for a file that cannot be read or used.
 */
export function loadMcpConfig(sources: McpConfigSources): { servers: McpServerConfig[]; notices: string[] } {
  const notices: string[] = [];
  const byName = new Map<string, McpServerConfig>();
  const read = (file: string, required: boolean) => {
    const where = `the MCP configuration ${file}`;
    const text = readTextFile(file, {
      where,
      error: mcpPlace(file).error,
      ...(!required && { ifMissing: () => undefined }),
    });
    if (text === undefined) return;
    for (const server of parseMcpConfig(text, file, sources.env)) {
      byName.delete(server.name); // the newest keeps its place at the end
      byName.set(server.name, server);
    }
  };
  read(path.join(sources.home, ".pi-course", "mcp.json"), false);
  if (sources.project !== undefined) {
    const file = path.join(sources.project, ".pi-course", "mcp.json");
    if (sources.projectTrusted) read(file, false);
    else if (existsSync(file)) {
      notices.push(
        `the project's MCP servers (${file}) are not started: ${sources.untrustedReason ?? "the folder is not trusted"}`,
      );
    }
  }
  for (const file of sources.files ?? []) read(path.resolve(file), true);
  return { servers: [...byName.values()], notices };
}

/**
 * The names of the variables (`${NAME}`) that the user's `mcp.json`, the `--mcp-config` files
 * of `argv` and the project's `.pi-course/mcp.json` mention, for the launcher to hand over with
 * the key (the agent's own environment has no secret-looking variable). Never throws: unreadable
 * files are `parseArgs`'s to report.
 */
export function mcpVariables(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  home: string,
): string[] {
  const from = env.INIT_CWD ?? process.cwd();
  const files = [path.join(home, ".pi-course", "mcp.json")];
  let project = from;
  argv.forEach((arg, i) => {
    const next = argv[i + 1];
    if (arg === "--mcp-config" && next !== undefined) files.push(path.resolve(from, next));
    if (arg === "--cwd" && next !== undefined) project = path.resolve(from, next);
  });
  // The project's file too: its values are used only if the folder is trusted (main.ts decides).
  files.push(path.join(project, ".pi-course", "mcp.json"));
  const names = new Set<string>();
  for (const file of files) {
    let text: string;
    try {
      text = readTextFile(file); // a FIFO or /dev/zero is refused here too, not read
    } catch {
      continue;
    }
    for (const match of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}/g)) names.add(match[1]!);
  }
  return [...names];
}
