/**
 * `npm start -- mcp add | list | get | remove`: the MCP servers of the user's
 * `~/.pi-course/mcp.json` and of the project's `.pi-course/mcp.json` (`--project`), edited as
 * `claude mcp add` and `pi mcp add` edit theirs. A file is rewritten whole (a new file renamed
 * into place, 0600: it may hold keys), keeping its other keys and servers; `${VAR}` values stay
 * as written. An entry is checked as a run would read it before it is written.
 *
 * The project's file passes the trust gate as a run's does: `login`/`logout` and `get` use a
 * project's entry only in a trusted folder (`isTrusted`), and its `${VAR}`s are never filled in
 * otherwise; `list` and `get` say which file each entry came from and whether it is used. Writes
 * never leave the project: a `.pi-course` folder or an `mcp.json` that is a symbolic link is
 * refused (read or written), and a file is written whole inside the real folder, from a fresh
 * file that nothing else can have put there. Every name and entry printed goes through the
 * terminal guard (`untrustedText`): the project's file chose them.
 */
import { randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Type } from "typebox";
import { errorText } from "../base/errors.js";
import { McpConfigError, type McpServerConfig, parseMcpConfig } from "../mcp/config.js";
import { readJsonFile } from "../base/read-json.js";
import { projectRoot } from "../resources/folders.js";
import { isTrusted } from "../resources/trust.js";
import { boundedDuration } from "../base/timer.js";
import type { CliIO } from "./io.js";
import { homeFolder } from "./settings.js";
import { neutralize, untrustedText } from "./terminal-text.js";

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
    else if (arg === "--timeout") {
      // the one duration reader, for a wait that must end: past a timer's reach is refused
      const seconds = next !== undefined && /^[0-9]+(\.[0-9]+)?$/.test(next) ? Number(next) : Number.NaN;
      if (!(seconds > 0))
        return usage(`--timeout takes a number of seconds above 0, got ${neutralize(next ?? "nothing")}.`);
      try {
        timeoutMs = boundedDuration(seconds, "--timeout", "s");
      } catch (error) {
        return usage(`${(error as Error).message}.`);
      }
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
  try {
    const files = mcpFiles(io.env, project);
    switch (verb) {
      case "list":
        return list(files, io);
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
        return add(name, entry, files, scope, io);
      }
      case "remove": {
        if (words.length !== 1) return usage("mcp remove takes one NAME.");
        return remove(words[0]!, files, scope, io);
      }
      case "login":
      case "logout": {
        if (words.length !== 1) return usage(`mcp ${verb} takes one NAME.`);
        const { runLogin, runLogout } = await import("./mcp-login.js");
        const config = serverEntryOf(words[0]!, files, io);
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
    io.stderr.write(`error: ${shown(errorText(error))}\n`);
    return 1;
  }
}

/** The two files the command edits, and whether the project's may be used. */
interface McpFiles {
  user: string;
  project: string;
  /** The project's saved trust decision (`isTrusted`): only `true` lets its entries be used. */
  projectTrusted: boolean;
}

function mcpFiles(env: NodeJS.ProcessEnv, project: string): McpFiles {
  return {
    user: path.join(homeFolder(env), "mcp.json"),
    project: path.join(project, ".pi-course", "mcp.json"),
    projectTrusted: isTrusted(projectRoot(project), homeFolder(env)) === true,
  };
}

/**
 * Throws when the project's `.pi-course` folder or its `mcp.json` is a symbolic link (or not a
 * folder / not a file): a clone could point either at the user's own configuration, whose
 * entries (and keys) would then be copied into the project, or whose file would be written as
 * the project's. Nothing there is read or written then.
 */
function refuseLinks(file: string): void {
  for (const [at, kind] of [
    [path.dirname(file), "folder"],
    [file, "file"],
  ] as const) {
    let info: ReturnType<typeof lstatSync>;
    try {
      info = lstatSync(at);
    } catch {
      return; // not there yet: add makes a real one
    }
    const why = info.isSymbolicLink()
      ? `is a symbolic link (to ${readlinkSync(at)})`
      : kind === "folder" && !info.isDirectory()
        ? "is not a folder"
        : kind === "file" && !info.isFile()
          ? "is not a regular file"
          : undefined;
    if (why !== undefined)
      throw new McpConfigError(
        `${at} ${why}: the project's MCP configuration must be a real ${kind} inside the project, so it is neither read nor written; replace it with one`,
      );
  }
}

/** The file of `scope`; the project's is checked for links first. */
function fileOf(files: McpFiles, scope: Scope): string {
  if (scope === "project") refuseLinks(files.project);
  return files[scope];
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

/**
 * Writes `whole` to `file` whole: a fresh file (0600, created by this call: `wx` refuses one that
 * is there already, a planted link among them) in the same folder, renamed into place.
 */
function writeEdited(file: string, whole: Record<string, unknown>): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const fresh = path.join(path.dirname(file), `.mcp-${randomBytes(6).toString("hex")}.tmp`);
  try {
    writeFileSync(fresh, `${JSON.stringify(whole, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    renameSync(fresh, file);
  } catch (error) {
    rmSync(fresh, { force: true });
    throw error;
  }
}

/** What `add` and `remove --project` add to their message in a folder that is not trusted. */
function untrustedNote(files: McpFiles, scope: Scope): string {
  return scope === "project" && !files.projectTrusted ? " (it starts once this folder is trusted)" : "";
}

function add(name: string, entry: Record<string, unknown>, files: McpFiles, scope: Scope, io: CliIO): number {
  const file = fileOf(files, scope);
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
  io.stdout.write(`added the MCP server ${shown(name)} to ${file}${untrustedNote(files, scope)}\n`);
  return 0;
}

function remove(name: string, files: McpFiles, scope: Scope, io: CliIO): number {
  const file = fileOf(files, scope);
  const { whole, servers } = readEdited(file);
  if (!(name in servers)) throw new Error(`${file} has no server named "${name}"`);
  delete servers[name];
  writeEdited(file, { ...whole, mcpServers: servers });
  io.stdout.write(`removed the MCP server ${shown(name)} from ${file}\n`);
  return 0;
}

/**
 * The servers of `scope`'s file, or why they are not read (a linked project file: said on
 * stderr, so the user's own servers are still listed).
 */
function serversOf(files: McpFiles, scope: Scope, io: CliIO): Record<string, unknown> {
  try {
    return readEdited(fileOf(files, scope)).servers;
  } catch (error) {
    if (scope === "user") throw error;
    io.stderr.write(`warning: ${shown(errorText(error))}\n`);
    return {};
  }
}

/** Where an entry of `scope` came from, and whether a run uses it. */
function origin(files: McpFiles, scope: Scope): string {
  const gate = scope === "project" && !files.projectTrusted ? "; starts once this folder is trusted" : "";
  return `(${scope}: ${files[scope]}${gate})`;
}

/** Each server of both files, one line each, with the file it came from; the project's say whether this folder is trusted. */
function list(files: McpFiles, io: CliIO): number {
  let any = false;
  for (const scope of ["user", "project"] as const) {
    for (const [name, entry] of Object.entries(serversOf(files, scope, io))) {
      any = true;
      io.stdout.write(`${shown(name)}  ${describeEntry(entry)}  ${origin(files, scope)}\n`);
    }
  }
  if (!any) io.stdout.write(`no MCP servers in ${files.user} or ${files.project}\n`);
  return 0;
}

/**
 * The server `name` as a run would take it: the project's entry wins in a trusted folder;
 * elsewhere the user's does, and a project's entry is shown as one that is not used.
 */
function get(name: string, files: McpFiles, io: CliIO): number {
  const order: Scope[] = files.projectTrusted ? ["project", "user"] : ["user", "project"];
  for (const scope of order) {
    const servers = serversOf(files, scope, io);
    if (!(name in servers)) continue;
    // JSON writes a newline or a C0 character inside a string as an escape: each line is the entry's layout
    io.stdout.write(`${shown(name)} ${origin(files, scope)}\n${neutralize(JSON.stringify(servers[name], null, 2))}\n`);
    return 0;
  }
  throw new Error(`no MCP server is named "${name}" in ${files.user} or ${files.project}`);
}

/**
 * The server `name` as a run reads it (`${VAR}`s from the environment): the project's entry
 * only in a trusted folder, else the user's. Throws when it cannot be used, and says so when
 * the only entry is a project's that is not trusted (its variables are never filled in).
 */
function serverEntryOf(name: string, files: McpFiles, io: CliIO): McpServerConfig {
  const scopes: Scope[] = files.projectTrusted ? ["project", "user"] : ["user"];
  for (const scope of scopes) {
    const file = fileOf(files, scope);
    const { servers } = readEdited(file);
    if (!(name in servers)) continue;
    const [config] = parseMcpConfig(JSON.stringify({ mcpServers: { [name]: servers[name] } }), file, io.env);
    if (config === undefined) throw new Error(`the MCP server "${name}" is disabled in ${file}`);
    if (config.problem !== undefined) throw new Error(config.problem);
    return config;
  }
  if (!files.projectTrusted && name in serversOf(files, "project", io))
    throw new Error(
      `the MCP server "${name}" is only in ${files.project}, and this folder is not trusted: its entry is not used ` +
        `(trust the folder: start pi-course in it and answer yes; or add the server to ${files.user})`,
    );
  throw new Error(`no MCP server is named "${name}" in ${files.user} or ${files.project}`);
}

/** A name or an entry a configuration file chose, as the terminal shows it. */
function shown(text: string): string {
  return untrustedText(text, { max: 500 });
}

/** `command args…`, or the URL, of an entry as it is written. */
function describeEntry(entry: unknown): string {
  const e = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
  if (typeof e.url === "string") return shown(e.url);
  const args = Array.isArray(e.args) ? e.args.map(String) : [];
  return shown([String(e.command ?? "(no command)"), ...args].join(" "));
}
