/**
 * The command line of the main job (`npm start`): parsing, with the option table of options.ts
 * (chapter 13's options and each feature's), into `RunOptions`.
 *
 * Parsing takes argv and the environment and gives options or a usage error; the only things it
 * reads besides are the optional config file (see settings.ts) and the files named by
 * `--prompt-file` and `--api-key-file` (`-`: stdin).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { extensionFiles } from "../resources/extension-host.js";
import { projectExtensionFolder } from "../resources/resources.js";
import { commandName } from "./help.js";
import {
  ConfigError,
  SETTINGS,
  homeFolder,
  describeValue,
  readConfigFile,
  resolveSettings,
  type Setting,
  type SettingName,
  type Settings,
} from "./settings.js";
import type { ParsedInput, ServerRoute } from "./features/feature.js";
import { FEATURES, readArgv, type ReadArgv, type ReadArgvOptions } from "./options.js";
import {
  DEFAULT_KEY_VARIABLE,
  MIN_CONTEXT_TOKENS,
  PROVIDERS,
  type CliMode,
  type CliOptions,
  type Provider,
  type RunOptions,
  type ServerOptions,
} from "./run-options.js";
import { CliUsageError } from "./usage-error.js";
import { readTextFile } from "../base/read-json.js";

export {
  DEFAULT_KEY_VARIABLE,
  MIN_CONTEXT_TOKENS,
  PROVIDERS,
  type CliMode,
  type CliOptions,
  type Provider,
  type RunOptions,
} from "./run-options.js";
export { CliUsageError } from "./usage-error.js";
export { HELP, commandName, helpText } from "./help.js";

/** What a usage error prints; `env` tells how the program was started (see `commandName`). */
export function usageMessage(error: CliUsageError, env: NodeJS.ProcessEnv): string {
  return `error: ${error.message}\nRun \`${commandName(env)} --help\` for the options.\n`;
}

/** The terminal `npm start` runs on: both ends must be a terminal for a conversation. */
export interface Terminal {
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
}

/**
 * The variable the key will be read from for `argv` (the launcher hands only that one over to
 * the agent), or undefined with `--no-api-key` or `--api-key-file`. Never throws: a usage
 * problem is found by `parseArgs`.
 */
export function keyVariable(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  if (argv.includes("--no-api-key") || argv.includes("--api-key-file")) return undefined;
  const after = (flag: string) => {
    const at = argv.indexOf(flag);
    return at !== -1 ? argv[at + 1] : undefined;
  };
  let file: Settings = {};
  try {
    file = readConfigFile(env, after("--config")).settings;
  } catch {
    // parseArgs reports it.
  }
  const named = resolveSettings({ apiKeyEnv: after("--api-key-env"), provider: after("--provider") }, env, file);
  if (named.apiKeyEnv !== undefined) return named.apiKeyEnv.value;
  // A feature may pick the provider (a catalogue name alone), and its key variable (none for a local server).
  try {
    const flags = { provider: after("--provider"), baseUrl: after("--base-url"), model: after("--model") };
    const route = serverRoute(resolveSettings(flags, env, file), env);
    if (route !== undefined) return route.firstKey;
  } catch {
    // parseArgs reports a file a feature cannot use.
  }
  return named.provider?.value === "anthropic" ? DEFAULT_KEY_VARIABLE.anthropic : DEFAULT_KEY_VARIABLE.openai;
}

/** What every mode shares, once the table has read argv and the settings are resolved. */
interface Parsed {
  read: ReadArgv;
  env: NodeJS.ProcessEnv;
  from: string;
  settings: Partial<Record<SettingName, Setting>>;
  configFile: string | undefined;
  blame: (name: SettingName) => string;
  /** The last value of a string option, if given. */
  text: (name: string) => string | undefined;
}

/**
 * The first reading of `argv`: `parseArgs`, with an unknown `--NAME` left for the extensions to
 * add (`unknownOptions`; main.ts reads argv again once they have loaded) when one may load (one
 * is named, or an extensions folder has files). Throws `CliUsageError`.
 */
export function readCommandLine(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  terminal: boolean | Terminal,
): CliOptions {
  const parsed = parseArgs(argv, env, terminal, { unknown: "collect" });
  if (parsed.kind !== "run" || parsed.unknownOptions === undefined) return parsed;
  const locations = { cwd: parsed.folder, piHome: homeFolder(env), userHome: env.HOME || homedir() };
  const mayLoad =
    parsed.extensions.length > 0 ||
    extensionFiles(path.join(locations.piHome, "extensions")).length > 0 ||
    extensionFiles(projectExtensionFolder(locations)).length > 0;
  if (!mayLoad) throw new CliUsageError(`unknown option ${parsed.unknownOptions[0]}.`);
  return parsed;
}

/**
 * Parses `argv` (without `node` and the script). Throws `CliUsageError`. `how` reads the
 * extensions' flags (`extra`; their values land in `extensionFlags`), or collects unknown
 * `--NAME` options in `unknownOptions` instead of throwing (`unknown: "collect"`).
 */
export function parseArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  terminal: boolean | Terminal,
  how: ReadArgvOptions = {},
): CliOptions {
  const tty: Terminal = typeof terminal === "boolean" ? { stdinIsTTY: false, stdoutIsTTY: terminal } : terminal;
  const read = readArgv(argv, how);
  if (read.help) return { kind: "help" };
  const from = env.INIT_CWD ?? process.cwd();
  const configPath = read.values.get("config")?.at(-1) as string | undefined;
  let config: { settings: Settings; file?: string };
  try {
    config = readConfigFile(env, configPath === undefined ? undefined : path.resolve(from, configPath));
  } catch (error) {
    if (error instanceof ConfigError) throw new CliUsageError(error.message);
    throw error;
  }
  const settings = resolveSettings(read.flags, env, config.settings);
  const blame = (name: SettingName): string => {
    const where = settings[name]?.source;
    if (where === "env") return ` (from $${SETTINGS[name].env})`;
    if (where === "config") return ` (from "${name}" in ${config.file})`;
    return "";
  };
  const text = (name: string) => read.values.get(name)?.at(-1) as string | undefined;
  const options = runOptions({ read, env, from, settings, configFile: config.file, blame, text }, tty);
  const extensionFlags = new Map<string, string | true>();
  for (const spec of how.extra ?? []) {
    const value = read.values.get(spec.name!)?.at(-1);
    if (value !== undefined) extensionFlags.set(spec.name!, value);
  }
  return {
    ...options,
    ...(read.unknown.length > 0 && { unknownOptions: read.unknown }),
    ...(extensionFlags.size > 0 && { extensionFlags }),
  };
}

/** The run `parsed` asks for: the parts every mode shares, then the server's, if any. */
function runOptions(parsed: Parsed, tty: Terminal): RunOptions {
  const { read, env, from, settings, blame, text } = parsed;
  const has = (name: string) => read.values.has(name);
  const count = (name: string) => read.values.get(name)?.length ?? 0;
  const json = has("json");
  if ([json, has("print"), has("interactive")].filter(Boolean).length > 1) {
    throw new CliUsageError("choose one of --json, --print and --interactive.");
  }
  if (count("approve") + count("no-approve") > 1) throw new CliUsageError("choose one of --approve and --no-approve.");
  const extensions = (read.values.get("extension") ?? []) as string[];
  const extensionFiles = extensions.map((file) => path.resolve(from, file));
  for (const [i, file] of extensionFiles.entries()) {
    if (!existsSync(file) || !statSync(file).isFile())
      throw new CliUsageError(`--extension ${extensions[i]}: ${file} is not a file.`);
  }
  const resume = text("resume");
  if ((has("continue") ? 1 : 0) + (resume !== undefined ? 1 : 0) + (has("no-session") ? 1 : 0) > 1) {
    throw new CliUsageError("choose one of --continue, --resume ID and --no-session.");
  }
  const colorFlag = read.last("color", "no-color");
  const color =
    colorFlag === undefined ? tty.stdoutIsTTY && !json && env.NO_COLOR === undefined : colorFlag === "color";
  const server = serverChoice(parsed);
  const mode = runMode(parsed, tty);
  const sessionRoot = path.resolve(from, settings.sessionDir?.value ?? path.join(homeFolder(env), "sessions"));
  const session = has("no-session")
    ? undefined
    : { root: sessionRoot, continue: has("continue"), ...(resume !== undefined && { resume }) };
  const contextTokens = contextTokensOf(settings.contextTokens?.value, blame);
  const approve = read.last("approve", "no-approve");
  const core = {
    kind: "run" as const,
    mode,
    json,
    color,
    dropToolResult: has("drop-tool-result"),
    session,
    contextFiles: !has("no-context-files"),
    extensions: extensionFiles,
    ...(approve !== undefined && { approve: approve === "approve" }),
    ...(parsed.configFile !== undefined && { configFile: parsed.configFile }),
    ...(contextTokens !== undefined && { contextTokens }),
  };
  const input: ParsedInput = { ...parsed, values: read.values, flags: read.flags, session };
  // Contract: each feature's parse gives the fields it adds to RunOptions.
  const common = Object.assign(core, ...FEATURES.map((f) => f.parse?.(input) ?? {})) as Omit<RunOptions, "folder">;
  const onServerNamed = server.baseUrl !== undefined || server.provider === "anthropic";
  return onServerNamed ? onServer(parsed, common, server) : offline(parsed, common);
}

/**
 * The server a feature picks from `settings` (a model catalogue's name alone), if one does.
 * Throws `CliUsageError` for a file a feature cannot use.
 */
export function serverRoute(
  settings: Partial<Record<SettingName, Setting>>,
  env: NodeJS.ProcessEnv,
): ServerRoute | undefined {
  for (const feature of FEATURES) {
    const route = feature.route?.(settings, env);
    if (route !== undefined) return route;
  }
  return undefined;
}

/** The server the settings name: the provider, the base URL, and the route a feature picked, if any. */
interface ServerChoice {
  provider: Provider;
  baseUrl: string | undefined;
  route?: ServerRoute;
}

function serverChoice({ settings, env, blame }: Parsed): ServerChoice {
  const providerName = settings.provider?.value ?? "openai";
  if (!(PROVIDERS as readonly string[]).includes(providerName)) {
    throw new CliUsageError(
      `unknown provider "${providerName}"${blame("provider")}; the providers are ${PROVIDERS.join(" and ")}.`,
    );
  }
  const route = serverRoute(settings, env);
  if (route === undefined) return { provider: providerName as Provider, baseUrl: settings.baseUrl?.value };
  return { provider: route.provider, baseUrl: route.baseUrl, route };
}

/** The mode argv asks for (a task given and the terminal decide when no flag does). */
function runMode({ read, text }: Parsed, tty: Terminal): CliMode {
  const promptFile = text("prompt-file");
  if (promptFile !== undefined && read.positionals.length > 0) {
    throw new CliUsageError("give the task either as arguments or with --prompt-file, not both.");
  }
  if (promptFile !== undefined && promptFile === text("api-key-file")) {
    throw new CliUsageError("--prompt-file and --api-key-file cannot both read the same file or stdin.");
  }
  const hasTask = read.positionals.length > 0 || promptFile !== undefined;
  const mode: CliMode = read.values.has("json")
    ? "json"
    : read.values.has("print")
      ? "print"
      : read.values.has("interactive") || (!hasTask && tty.stdinIsTTY && tty.stdoutIsTTY)
        ? "interactive"
        : "trace";
  if (mode === "interactive" && !(tty.stdinIsTTY && tty.stdoutIsTTY)) {
    throw new CliUsageError(
      "--interactive needs a terminal on stdin and stdout; give a task instead (or --print, --json).",
    );
  }
  return mode;
}

/** `--context-tokens` as a number, if set; a usage error unless a whole number of at least `MIN_CONTEXT_TOKENS`. */
function contextTokensOf(text: string | undefined, blame: (name: SettingName) => string): number | undefined {
  if (text === undefined) return undefined;
  const tokens = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!(Number.isSafeInteger(tokens) && tokens >= MIN_CONTEXT_TOKENS)) {
    throw new CliUsageError(
      `--context-tokens must be a whole number of tokens, at least ${MIN_CONTEXT_TOKENS}, ` +
        `got "${text}"${blame("contextTokens")}.`,
    );
  }
  return tokens;
}

/** The offline demo: no server, so nothing a server needs may be given. */
function offline({ read, from, settings, text }: Parsed, common: Omit<RunOptions, "folder">): RunOptions {
  const positional = read.positionals;
  const serverOnly = [
    settings.model?.value,
    text("cwd"),
    read.flags.apiKeyEnv,
    text("api-key-file"),
    text("prompt-file"),
  ];
  if (serverOnly.some((v) => v !== undefined) || (positional.length > 0 && common.mode !== "interactive")) {
    throw new CliUsageError(
      "the offline demo plays a fixed script in a fresh temporary folder; --model, --cwd, " +
        "--api-key-env, --api-key-file, --prompt-file and a task need --base-url (a real server).",
    );
  }
  return { ...common, folder: path.resolve(from), ...(positional.length > 0 && { task: positional.join(" ") }) };
}

/** A run on a server: its URL, model, workspace, task and key, each checked. */
function onServer(parsed: Parsed, common: Omit<RunOptions, "folder">, choice: ServerChoice): RunOptions {
  const { settings, blame, text } = parsed;
  const { provider, baseUrl } = choice;
  const shownBaseUrl = baseUrl === undefined ? undefined : checkedBaseUrl(baseUrl, provider, blame);
  const needs = choice.route?.namedBy ?? (baseUrl !== undefined ? "--base-url" : "--provider anthropic");
  const model = settings.model?.value;
  const resuming = common.session !== undefined && (common.session.continue || common.session.resume !== undefined);
  if ((model === undefined || model === "") && !resuming) {
    throw new CliUsageError(
      `${needs} needs --model NAME (the model id the server knows), or --continue / --resume ID to go on with a session's.`,
    );
  }
  const cwd = text("cwd");
  if (cwd === undefined) {
    throw new CliUsageError(`${needs} needs --cwd DIR: name the folder the agent may work in.`);
  }
  if (cwd.trim() === "") {
    throw new CliUsageError('--cwd "" names no folder; give one (write --cwd . for the current folder).');
  }
  const workspace = path.resolve(parsed.from, cwd);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) {
    throw new CliUsageError(`the workspace ${workspace} does not exist or is not a folder (--cwd).`);
  }
  const task = taskOf(parsed, common.mode);
  const server: ServerOptions = {
    provider,
    ...(shownBaseUrl !== undefined && { baseUrl: shownBaseUrl }),
    model: model ?? "",
    modelFrom: model === undefined || model === "" ? "session" : settings.model!.source === "flag" ? "flag" : "setting",
    ...apiKeyOf(parsed, choice),
    workspace,
    ...choice.route?.server,
  };
  return { ...common, folder: workspace, ...(task !== undefined && { task }), server };
}

/** `--base-url` without its trailing slashes; a usage error for anything but a plain http(s) URL. */
function checkedBaseUrl(baseUrl: string, provider: Provider, blame: (name: SettingName) => string): string {
  const shownUrl = JSON.stringify(redactUrl(baseUrl));
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new CliUsageError(
      `--base-url ${shownUrl}${blame("baseUrl")} is not a URL. Give one like http://127.0.0.1:8080/v1.`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliUsageError(`--base-url must be http:// or https://, got ${shownUrl}${blame("baseUrl")}.`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new CliUsageError(
      `--base-url ${shownUrl} carries a user name or password; leave them out of the URL and give the ` +
        `key with $${DEFAULT_KEY_VARIABLE[provider]}, --api-key-env NAME or --api-key-file PATH.`,
    );
  }
  return baseUrl.replace(/\/+$/, "");
}

/** The task: the arguments, or the `--prompt-file`; none only in the interactive mode. */
function taskOf({ read, from, text }: Parsed, mode: CliMode): string | undefined {
  const promptFile = text("prompt-file");
  const hasTask = read.positionals.length > 0 || promptFile !== undefined;
  const task = hasTask
    ? (promptFile === undefined ? read.positionals.join(" ") : readText("--prompt-file", promptFile, from)).trim()
    : undefined;
  if (task === "" || (task === undefined && mode !== "interactive")) {
    throw new CliUsageError(
      promptFile === undefined
        ? 'give the task as an argument, e.g. "list the files and summarise them", or with --prompt-file PATH ' +
            "(or run on a terminal without a task to talk to the agent)."
        : `the task file ${promptFile} is empty (--prompt-file).`,
    );
  }
  return task;
}

/** The key (and the variable it came from), from `--api-key-file`, the catalogue's variables, or the environment. */
function apiKeyOf({ read, settings, env, from, text }: Parsed, choice: ServerChoice): Partial<ServerOptions> {
  const apiKeyEnv = settings.apiKeyEnv?.value;
  const apiKeyFile = text("api-key-file");
  const noApiKey = read.values.has("no-api-key");
  if (apiKeyFile !== undefined && (noApiKey || read.flags.apiKeyEnv !== undefined)) {
    throw new CliUsageError("--api-key-file cannot be combined with --api-key-env or --no-api-key: choose one.");
  }
  const named = apiKeyEnv !== undefined ? { apiKeyEnv } : {};
  if (apiKeyFile !== undefined) {
    const apiKey = readText("--api-key-file", apiKeyFile, from).split(/\r?\n/)[0]!.trim();
    if (apiKey === "")
      throw new CliUsageError(`no API key: the first line of ${apiKeyFile} is empty (--api-key-file).`);
    return { apiKey, ...named };
  }
  if (noApiKey) return { ...named };
  if (choice.route !== undefined && apiKeyEnv === undefined) return choice.route.keys(env);
  const name = apiKeyEnv ?? DEFAULT_KEY_VARIABLE[choice.provider];
  const apiKey = env[name];
  if (apiKey === undefined || apiKey === "") {
    const shown = looksLikeVariableName(name)
      ? `$${name}`
      : `the variable --api-key-env names (${describeValue(name)}, not shown: it looks like a key, not a variable name)`;
    throw new CliUsageError(
      `no API key: ${shown} is not set. Set it, name another variable with --api-key-env NAME, ` +
        `or pass --no-api-key for a local server that needs none.`,
    );
  }
  return { apiKey, ...named };
}

/**
 * Whether `name` looks like an environment variable's name (`OPENAI_API_KEY`, `GROQ_KEY`, `KEY`)
 * rather than a key pasted in its place: upper case, digits and underscores, and either an
 * underscore or at most 12 characters.
 */
function looksLikeVariableName(name: string): boolean {
  return /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/.test(name) && (name.includes("_") || name.length <= 12);
}

/**
 * Reads the file an option names (`-`: stdin, to its end): a regular file only, capped like
 * every file a user names (`readTextFile`); a usage error says what failed.
 */
function readText(option: string, file: string, from: string): string {
  if (file !== "-") {
    return readTextFile(path.resolve(from, file), {
      where: `${option} ${file}`,
      allowPipe: true, // e.g. --api-key-file <(pass show openai)
      error: (message, failure) =>
        new CliUsageError(failure === "missing" ? `${option} ${file}: cannot read it (ENOENT).` : `${message}.`),
    });
  }
  try {
    return readFileSync(0, "utf8");
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new CliUsageError(`${option} -: cannot read it (${why}).`);
  }
}

/** `url` with any `user:password@` replaced by `***@`, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/?#\s]*@/i, "$1***@");
}

/**
 * Every key variable `argv` will read (the launcher hands over exactly these): `keyVariable`'s,
 * and with a route a feature picked (a catalogue name) each model's provider's. Never throws.
 */
export function keyVariables(argv: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const first = keyVariable(argv, env);
  const names = first === undefined ? [] : [first];
  if (first === undefined && (argv.includes("--no-api-key") || argv.includes("--api-key-file"))) return names;
  const after = (flag: string) => {
    const at = argv.indexOf(flag);
    return at !== -1 ? argv[at + 1] : undefined;
  };
  try {
    const file = readConfigFile(env, after("--config")).settings;
    const flags = { provider: after("--provider"), baseUrl: after("--base-url"), model: after("--model") };
    const settings = resolveSettings({ ...flags, apiKeyEnv: after("--api-key-env") }, env, file);
    if (settings.apiKeyEnv !== undefined) return names;
    for (const name of serverRoute(settings, env)?.keyVariables ?? []) {
      if (!names.includes(name)) names.push(name);
    }
  } catch {
    // parseArgs reports it.
  }
  return names;
}
