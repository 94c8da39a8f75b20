/**
 * `npm start -- mcp add | list | get | remove`: the MCP servers of the user's
 * `~/.pi-course/mcp.json` and of the project's `.pi-course/mcp.json` (`--project`), edited as
 * `claude mcp add` and `pi mcp add` edit theirs. A file is rewritten whole (a new file renamed
 * into place, 0600: it may hold keys), keeping its other keys and servers; `${VAR}` values stay
 * as written. An entry is checked as a run would read it before it is written. The project's
 * servers start only in a trusted folder: `list` says whether this one is.
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Type } from "typebox";
import { errorText } from "../base/errors.js";
import { McpConfigError, type McpServerConfig, parseMcpConfig } from "../mcp/config.js";
import { readJsonFile } from "../base/read-json.js";
import { projectRoot } from "../resources/folders.js";
import { isTrusted } from "../resources/trust.js";
import type { CliIO } from "./io.js";
import { homeFolder } from "./settings.js";
import { neutralize } from "./trace.js";

export const MCP_USAGE = `usage:
  npm start -- mcp list
  npm start -- mcp get NAME
  npm start -- mcp add NAME [--project] [--env KEY=VALUE]... -- COMMAND [ARG...]
  npm start -- mcp add NAME [--project] [--header "KEY: VALUE"]... URL
  npm start -- mcp remove NAME [--project]
  npm start -- mcp login NAME [--no-browser] [--timeout SECONDS]
  npm start -- mcp logout NAME
login: authorizes a remote server that asks for it (OAuth: the URL is printed and opened in a
browser where there is one; the tokens are kept 0600 in ~/.pi-course/mcp-auth/); logout forgets them.
--project: the project's .pi-course/mcp.json (of --cwd DIR, else this folder) instead of
~/.pi-course/mcp.json. Write keys as \${VAR}: the value is read from the environment when the
server starts, and the file keeps only the name.
`;

/** A file as it is edited: any JSON object whose "mcpServers" is an object. */
const EditedFileSchema = Type.Object(
  { mcpServers: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
  { expected: 'a JSON object (with an "mcpServers" object)' },
);

type Scope = "user" | "project";

/** Runs `mcp …` (argv after `mcp`); resolves with the exit code (2: usage). */
export async function runMcpCommand(argv: readonly string[], io: CliIO): Promise<number> {
  const [verb, ...rest] = argv;
  const from = io.env.INIT_CWD ?? process.cwd();
  let project = from;
  let scope: Scope = "user";
  const words: string[] = [];
  const env: Record<string, string> = {};
  const headers: Record<string, string> = {};
  let browser = true;
  let timeoutMs: number | undefined;
  const usage = (why: string) => {
    io.stderr.write(`error: ${why}\n${MCP_USAGE}`);
    return 2;
  };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const next = rest[i + 1];
    if (arg === "--") {
      words.push(...rest.slice(i + 1));
      break;
    }
    if (arg === "--project") scope = "project";
    else if (arg === "--no-browser") browser = false;
    else if (arg === "--timeout" && next !== undefined && /^[1-9][0-9]*$/.test(next)) {
      timeoutMs = Number(next) * 1000;
      i++;
    } else if (arg === "--cwd" && next !== undefined) project = path.resolve(from, rest[++i]!);
    else if (arg === "--env" && next !== undefined && /^[A-Za-z_][A-Za-z0-9_]*=/.test(next)) {
      const at = next.indexOf("=");
      env[next.slice(0, at)] = next.slice(at + 1);
      i++;
    } else if (arg === "--header" && next !== undefined && /^[^:\s]+:/.test(next)) {
      const at = next.indexOf(":");
      headers[next.slice(0, at)] = next.slice(at + 1).trim();
      i++;
    } else if (arg.startsWith("-"))
      return usage(`${neutralize(arg.slice(0, 40))} is not an option of mcp ${verb ?? ""}.`);
    else words.push(arg);
  }
  const files: Record<Scope, string> = {
    user: path.join(homeFolder(io.env), "mcp.json"),
    project: path.join(project, ".pi-course", "mcp.json"),
  };
  try {
    switch (verb) {
      case "list":
        return list(files, project, io);
      case "get": {
        if (words.length !== 1) return usage("mcp get takes one NAME.");
        return get(words[0]!, files, io);
      }
      case "add": {
        const [name, ...target] = words;
        if (name === undefined || target.length === 0)
          return usage("mcp add needs a NAME, then -- COMMAND [ARG...] or a URL.");
        const isUrl = target.length === 1 && /^[a-z][a-z0-9+.-]*:\/\//i.test(target[0]!);
        if (isUrl && Object.keys(env).length > 0) return usage("--env goes with a COMMAND; a URL takes --header.");
        if (!isUrl && Object.keys(headers).length > 0) return usage("--header goes with a URL; a COMMAND takes --env.");
        const entry: Record<string, unknown> = isUrl
          ? { url: target[0], ...(Object.keys(headers).length > 0 && { headers }) }
          : { command: target[0], args: target.slice(1), ...(Object.keys(env).length > 0 && { env }) };
        return add(name, entry, files[scope], io);
      }
      case "remove": {
        if (words.length !== 1) return usage("mcp remove takes one NAME.");
        return remove(words[0]!, files[scope], io);
      }
      case "login":
      case "logout": {
        if (words.length !== 1) return usage(`mcp ${verb} takes one NAME.`);
        const { runLogin, runLogout } = await import("./mcp-login.js");
        const config = serverEntryOf(words[0]!, files, io.env);
        return verb === "login" ? await runLogin(config, io, { browser, timeoutMs }) : await runLogout(config, io);
      }
      default:
        return usage(
          verb === undefined
            ? "mcp needs add, list, get, remove, login or logout."
            : `mcp ${neutralize(verb)} is not a command.`,
        );
    }
  } catch (error) {
    io.stderr.write(`error: ${neutralize(errorText(error))}\n`);
    return 1;
  }
}

/** The file's object and its servers (both empty when it does not exist). */
function readEdited(file: string): { whole: Record<string, unknown>; servers: Record<string, unknown> } {
  const whole = readJsonFile(file, EditedFileSchema, {
    where: file,
    ifMissing: () => ({}),
    error: (message) => new McpConfigError(`${message}; fix it or remove it`),
  }) as Record<string, unknown>;
  return { whole, servers: { ...((whole.mcpServers as Record<string, unknown> | undefined) ?? {}) } };
}

/** Writes `whole` to `file` whole: a new file (0600) renamed into place. */
function writeEdited(file: string, whole: Record<string, unknown>): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const fresh = `${file}.${process.pid}.tmp`;
  writeFileSync(fresh, `${JSON.stringify(whole, null, 2)}\n`, { mode: 0o600 });
  renameSync(fresh, file);
}

function add(name: string, entry: Record<string, unknown>, file: string, io: CliIO): number {
  const { whole, servers } = readEdited(file);
  if (name in servers) throw new Error(`${file} already has a server named "${name}"; remove it first`);
  // checked as a run reads it (${VAR} not expanded: each variable as its own name)
  const [checked] = parseMcpConfig(
    JSON.stringify({ mcpServers: { [name]: entry } }),
    file,
    new Proxy({}, { get: (_, key) => String(key) }),
  );
  if (checked?.problem !== undefined) throw new Error(checked.problem);
  writeEdited(file, { ...whole, mcpServers: { ...servers, [name]: entry } });
  io.stdout.write(`added the MCP server ${neutralize(name)} to ${file}\n`);
  return 0;
}

function remove(name: string, file: string, io: CliIO): number {
  const { whole, servers } = existsSync(file) ? readEdited(file) : { whole: {}, servers: {} };
  if (!(name in servers)) throw new Error(`${file} has no server named "${name}"`);
  delete servers[name];
  writeEdited(file, { ...whole, mcpServers: servers });
  io.stdout.write(`removed the MCP server ${neutralize(name)} from ${file}\n`);
  return 0;
}

/** Each server of both files, one line each; the project's say whether this folder is trusted. */
function list(files: Record<Scope, string>, project: string, io: CliIO): number {
  const trusted = isTrusted(projectRoot(project), homeFolder(io.env));
  let any = false;
  for (const scope of ["user", "project"] as const) {
    const { servers } = readEdited(files[scope]);
    for (const [name, entry] of Object.entries(servers)) {
      any = true;
      const gate = scope === "project" && trusted !== true ? "; starts once this folder is trusted" : "";
      io.stdout.write(`${neutralize(name)}  ${describeEntry(entry)}  (${scope}: ${files[scope]}${gate})\n`);
    }
  }
  if (!any) io.stdout.write(`no MCP servers in ${files.user} or ${files.project}\n`);
  return 0;
}

/** The server `name` as a run would take it (the project's file wins over the user's). */
function get(name: string, files: Record<Scope, string>, io: CliIO): number {
  for (const scope of ["project", "user"] as const) {
    const { servers } = readEdited(files[scope]);
    if (!(name in servers)) continue;
    io.stdout.write(
      `${neutralize(name)} (${scope}: ${files[scope]})\n${neutralize(JSON.stringify(servers[name], null, 2))}\n`,
    );
    return 0;
  }
  throw new Error(`no MCP server is named "${name}" in ${files.user} or ${files.project}`);
}

/** The server `name` as a run reads it (the project's file wins; `${VAR}`s from `env`). Throws when it cannot be used. */
function serverEntryOf(name: string, files: Record<Scope, string>, env: NodeJS.ProcessEnv): McpServerConfig {
  for (const scope of ["project", "user"] as const) {
    const { servers } = readEdited(files[scope]);
    if (!(name in servers)) continue;
    const [config] = parseMcpConfig(JSON.stringify({ mcpServers: { [name]: servers[name] } }), files[scope], env);
    if (config === undefined) throw new Error(`the MCP server "${name}" is disabled in ${files[scope]}`);
    if (config.problem !== undefined) throw new Error(config.problem);
    return config;
  }
  throw new Error(`no MCP server is named "${name}" in ${files.user} or ${files.project}`);
}

/** `command args…`, or the URL, of an entry as it is written. */
function describeEntry(entry: unknown): string {
  const e = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
  if (typeof e.url === "string") return neutralize(e.url);
  const args = Array.isArray(e.args) ? e.args.map(String) : [];
  return neutralize([String(e.command ?? "(no command)"), ...args].join(" "));
}
