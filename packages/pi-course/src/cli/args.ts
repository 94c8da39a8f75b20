/**
 * The command line of the main job (`npm start`): parsing and the help text.
 *
 * Parsing takes argv and the environment and gives options or a usage error; the only things it
 * reads besides are the optional config file (see config.ts) and the files named by
 * `--prompt-file` and `--api-key-file` (`-`: stdin).
 */
import { PiCourseError } from "../errors.js";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
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
} from "./config.js";
// #region ch18
import { THINKING_LEVELS, type ThinkingLevel } from "../model.js";
import { ModelCatalogue } from "../model-choice/catalogue.js";
import { ModelsFileError, loadModelsFileSync } from "../model-choice/models-file.js";
import type { ModelEndpoint } from "../model-choice/providers.js";
// #endregion
// #region ch17
import { McpConfigError, loadMcpConfig, type McpServerConfig } from "../mcp/config.js";
// #endregion

/** The ways `npm start` talks to a person (see `--help`). */
export type CliMode = "interactive" | "trace" | "print" | "json";

/** The providers `--provider` names. */
export const PROVIDERS = ["openai", "anthropic"] as const;
export type Provider = (typeof PROVIDERS)[number];

/** The variable the key is read from when none is named: one per provider. */
export const DEFAULT_KEY_VARIABLE: Readonly<Record<Provider, string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
};

/** A run as the user asked for it. */
/** The smallest `--context-tokens`: below it the system prompt and the tools' answers hardly fit. */
export const MIN_CONTEXT_TOKENS = 1_000;

export interface RunOptions {
  kind: "run";
  mode: CliMode;
  /** One JSON event per line instead of the readable trace (`mode === "json"`). */
  json: boolean;
  /** Colour in what is printed. */
  color: boolean;
  /** A break-it experiment for the course: the model never sees the first tool result. */
  dropToolResult: boolean;
  /** The first prompt; absent: the demo task (offline) or none (interactive). */
  task?: string;
  /** The folder the sessions belong to: the workspace (`--cwd`), or where `npm start` ran. */
  folder: string;
  /** Absent with `--no-session`: nothing is kept. */
  session?: {
    /** Holds one folder per working folder. */
    root: string;
    /** `--continue`: the newest session of `folder`. */
    continue: boolean;
    /** `--resume ID`: that session (an id or its start). */
    resume?: string;
    // #region ch19
    /**
     * `--no-recover`: a run the resumed session left unfinished (killed mid-way) is recorded as
     * it stands (nothing runs again) and not continued. Default false: it is recovered and goes on.
     */
    noRecover?: boolean;
    // #endregion
  };
  /** The config file that was read, if any. */
  configFile?: string;
  /**
   * `--context-tokens N`: the context budget (tokens the model may see per call). Each call is
   * projected to it, and with a session the conversation is compacted when it nears it.
   */
  contextTokens?: number;
  /** `--no-context-files`: no AGENTS.md / CLAUDE.md in the system prompt. */
  contextFiles: boolean;
  /** `--approve` (true) / `--no-approve` (false): trust the project for this run, or not. */
  approve?: boolean;
  /** `--extension PATH` (repeatable), absolute: extensions to load besides the folders'. */
  extensions: string[];
  // #region ch17
  /**
   * The MCP servers to start: `~/.pi-course/mcp.json`, then the project's `.pi-course/mcp.json`
   * once the folder is trusted (main.ts adds it), then each `--mcp-config FILE` (later files
   * replace earlier servers of the same name). Empty when none is configured.
   */
  mcpServers: McpServerConfig[];
  /** What a person should know about the MCP configuration (a project file not read, and why). */
  mcpNotices: string[];
  /** The `--mcp-config FILE`s, absolute, in order (read again with the project's file once it is trusted). */
  mcpConfigFiles: string[];
  // #endregion
  // #region ch16
  /**
   * `--codemode`, or `$PI_COURSE_CODEMODE` / the config file's `"codemode"` set to `1`, `on` or
   * `true` (a setting: see config.ts): add the `code` tool (a
   * script that calls the other tools, in a QuickJS sandbox).
   */
  codemode: boolean;
  // #endregion
  // #region ch18
  /**
   * `--thinking LEVEL` (or `$PI_COURSE_THINKING`, or `"thinking"` in the config file): the
   * thinking level of every call; absent: the model's default.
   */
  thinking?: ThinkingLevel;
  /** The user's models file (`~/.pi-course/models.json`), read at start when it exists; absent: none. */
  modelsFile?: string;
  // #endregion
  /** Absent: the offline demo on the scripted model. */
  server?: {
    provider: Provider;
    /** Absent for Anthropic: its public endpoint. */
    baseUrl?: string;
    model: string;
    apiKey?: string;
    /** The variable named by `--api-key-env` (or the config file), if any: the commands never see it. */
    apiKeyEnv?: string;
    workspace: string;
    // #region ch18
    /**
     * The catalogue chose the server (`--model NAME` with no base URL or provider set): each
     * model of a fallback list is reached on its own provider's server (`catalogueRoute`).
     */
    byCatalogue?: boolean;
    /**
     * With `byCatalogue` and no key option (`--api-key-env`, `--api-key-file`, `--no-api-key`):
     * the keys read, by variable, one per provider in the list. The commands never see them.
     */
    keys?: Record<string, string>;
    // #endregion
  };
}

/** What the user asked for. */
export type CliOptions = { kind: "help" } | RunOptions;

/** A mistake on the command line: printed with a pointer to `--help`, exit code 2. */
export class CliUsageError extends PiCourseError {
  override name = "CliUsageError";
  /** Stable: `"CLI_USAGE"`. */
  override readonly code = "CLI_USAGE";
}

/** What a usage error prints; `env` tells how the program was started (see `commandName`). */
export function usageMessage(error: CliUsageError, env: NodeJS.ProcessEnv): string {
  return `error: ${error.message}\nRun \`${commandName(env)} --help\` for the options.\n`;
}

export { HELP, commandName, helpText } from "./help.js";

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
  // #region ch18
  // A catalogue name alone picks the provider, and its key variable (none for a local server).
  try {
    const flags = { provider: after("--provider"), baseUrl: after("--base-url"), model: after("--model") };
    const route = catalogueRoute(resolveSettings(flags, env, file), env);
    if (route !== undefined) return route.endpoints[0]!.apiKeyEnv;
  } catch {
    // parseArgs reports a bad models file.
  }
  // #endregion
  return named.provider?.value === "anthropic" ? DEFAULT_KEY_VARIABLE.anthropic : DEFAULT_KEY_VARIABLE.openai;
}

/** Parses `argv` (without `node` and the script). Throws `CliUsageError`. */
export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv, terminal: boolean | Terminal): CliOptions {
  const tty: Terminal = typeof terminal === "boolean" ? { stdinIsTTY: false, stdoutIsTTY: terminal } : terminal;
  const positional: string[] = [];
  const flags: Settings = {};
  let json = false;
  let print = false;
  let interactive = false;
  let color: boolean | undefined;
  let dropToolResult = false;
  let noApiKey = false;
  let cwd: string | undefined;
  let apiKeyFile: string | undefined;
  let promptFile: string | undefined;
  let configPath: string | undefined;
  let resume: string | undefined;
  let continueLast = false;
  let noSession = false;
  // #region ch19
  let noRecover = false;
  // #endregion
  let contextFiles = true;
  let approve: boolean | undefined;
  let approveFlags = 0;
  const extensions: string[] = [];
  // #region ch17
  const mcpConfigs: string[] = [];
  // #endregion
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) {
        throw new CliUsageError(`${arg} needs a value.`);
      }
      i++;
      return next;
    };
    switch (arg) {
      case "-h":
      case "--help":
        return { kind: "help" };
      case "--json":
        json = true;
        break;
      case "-p":
      case "--print":
        print = true;
        break;
      case "-i":
      case "--interactive":
        interactive = true;
        break;
      case "--color":
        color = true;
        break;
      case "--no-color":
        color = false;
        break;
      case "--drop-tool-result":
        dropToolResult = true;
        break;
      case "--no-api-key":
        noApiKey = true;
        break;
      case "--provider":
        flags.provider = value();
        break;
      case "--base-url":
        flags.baseUrl = value();
        break;
      case "--model":
        flags.model = value();
        break;
      case "--api-key-env":
        flags.apiKeyEnv = value();
        break;
      case "--session-dir":
        flags.sessionDir = value();
        break;
      case "--context-tokens":
        flags.contextTokens = value();
        break;
      case "--cwd":
        cwd = value();
        break;
      // #region ch18
      case "--thinking":
        flags.thinking = value();
        break;
      // #endregion
      case "--api-key-file":
        apiKeyFile = value();
        break;
      case "--prompt-file":
        promptFile = value();
        break;
      case "--config":
        configPath = value();
        break;
      case "-c":
      case "--continue":
        continueLast = true;
        break;
      case "-r":
      case "--resume":
        resume = value();
        break;
      case "--no-session":
        noSession = true;
        break;
      // #region ch19
      case "--no-recover":
        noRecover = true;
        break;
      // #endregion
      case "--no-context-files":
        contextFiles = false;
        break;
      case "--approve":
        approve = true;
        approveFlags++;
        break;
      case "--no-approve":
        approve = false;
        approveFlags++;
        break;
      case "--extension":
        extensions.push(value());
        break;
      // #region ch17
      case "--mcp-config":
        mcpConfigs.push(value());
        break;
      // #endregion
      // #region ch16
      case "--codemode":
        flags.codemode = "on";
        break;
      // #endregion
      default:
        // `--api-key=sk-…` is a common mistake: the part after "=" is never shown.
        if (arg.startsWith("-")) throw new CliUsageError(`unknown option ${shownOption(arg)}.`);
        positional.push(arg);
    }
  }
  const from = env.INIT_CWD ?? process.cwd();
  let config: { settings: Settings; file?: string };
  try {
    config = readConfigFile(env, configPath === undefined ? undefined : path.resolve(from, configPath));
  } catch (error) {
    if (error instanceof ConfigError) throw new CliUsageError(error.message);
    throw error;
  }
  const settings = resolveSettings(flags, env, config.settings);
  const blame = (name: SettingName): string => {
    const where = settings[name]?.source;
    if (where === "env") return ` (from $${SETTINGS[name].env})`;
    if (where === "config") return ` (from "${name}" in ${config.file})`;
    return "";
  };
  if ([json, print, interactive].filter(Boolean).length > 1) {
    throw new CliUsageError("choose one of --json, --print and --interactive.");
  }
  if (approveFlags > 1) throw new CliUsageError("choose one of --approve and --no-approve.");
  const extensionFiles = extensions.map((file) => path.resolve(from, file));
  for (const [i, file] of extensionFiles.entries()) {
    if (!existsSync(file) || !statSync(file).isFile())
      throw new CliUsageError(`--extension ${extensions[i]}: ${file} is not a file.`);
  }
  if ((continueLast ? 1 : 0) + (resume !== undefined ? 1 : 0) + (noSession ? 1 : 0) > 1) {
    throw new CliUsageError("choose one of --continue, --resume ID and --no-session.");
  }
  const useColor = color ?? (tty.stdoutIsTTY && !json && env.NO_COLOR === undefined);
  const providerName = settings.provider?.value ?? "openai";
  if (!(PROVIDERS as readonly string[]).includes(providerName)) {
    throw new CliUsageError(
      `unknown provider "${providerName}"${blame("provider")}; the providers are ${PROVIDERS.join(" and ")}.`,
    );
  }
  let provider = providerName as Provider;
  let baseUrl = settings.baseUrl?.value;
  const model = settings.model?.value;
  // #region ch18
  let route: CatalogueRoute | undefined;
  try {
    route = catalogueRoute(settings, env);
  } catch (error) {
    if (error instanceof ModelsFileError) throw new CliUsageError(`${error.message}.`);
    throw error;
  }
  if (route !== undefined) {
    provider = route.endpoints[0]!.api === "anthropic" ? "anthropic" : "openai";
    baseUrl = route.endpoints[0]!.baseUrl;
  }
  // #endregion
  const onServer = baseUrl !== undefined || provider === "anthropic";
  if (promptFile !== undefined && positional.length > 0) {
    throw new CliUsageError("give the task either as arguments or with --prompt-file, not both.");
  }
  if (promptFile !== undefined && promptFile === apiKeyFile) {
    throw new CliUsageError("--prompt-file and --api-key-file cannot both read the same file or stdin.");
  }
  const hasTask = positional.length > 0 || promptFile !== undefined;
  const mode: CliMode = json
    ? "json"
    : print
      ? "print"
      : interactive || (!hasTask && tty.stdinIsTTY && tty.stdoutIsTTY)
        ? "interactive"
        : "trace";
  if (mode === "interactive" && !(tty.stdinIsTTY && tty.stdoutIsTTY)) {
    throw new CliUsageError(
      "--interactive needs a terminal on stdin and stdout; give a task instead (or --print, --json).",
    );
  }
  const sessionRoot = path.resolve(from, settings.sessionDir?.value ?? path.join(homeFolder(env), "sessions"));
  const session = noSession
    ? undefined
    : {
        root: sessionRoot,
        continue: continueLast,
        ...(resume !== undefined && { resume }),
        // #region ch19
        ...(noRecover && { noRecover }),
        // #endregion
      };
  const tokensText = settings.contextTokens?.value;
  const contextTokens =
    tokensText === undefined ? undefined : /^[0-9]+$/.test(tokensText) ? Number(tokensText) : Number.NaN;
  if (contextTokens !== undefined && !(Number.isSafeInteger(contextTokens) && contextTokens >= MIN_CONTEXT_TOKENS)) {
    throw new CliUsageError(
      `--context-tokens must be a whole number of tokens, at least ${MIN_CONTEXT_TOKENS}, ` +
        `got "${settings.contextTokens!.value}"${blame("contextTokens")}.`,
    );
  }
  // #region ch18
  const thinkingText = settings.thinking?.value;
  if (thinkingText !== undefined && !(THINKING_LEVELS as readonly string[]).includes(thinkingText)) {
    throw new CliUsageError(
      `--thinking must be one of ${THINKING_LEVELS.join(", ")}, got ${JSON.stringify(thinkingText.slice(0, 20))}${blame("thinking")}.`,
    );
  }
  const thinking = thinkingText as ThinkingLevel | undefined;
  // #endregion
  // #region ch16
  const codemodeFrom = settings.codemode?.source === "config" ? `"codemode" in ${config.file}` : "$PI_COURSE_CODEMODE";
  const codemode = codemodeOf(settings.codemode?.value, codemodeFrom);
  // #endregion
  // #region ch17
  let mcp: { servers: McpServerConfig[]; notices: string[] };
  const mcpConfigFiles = mcpConfigs.map((file) => path.resolve(from, file));
  try {
    // The project's own .pi-course/mcp.json waits for the trust decision (main.ts); these files
    // are the user's, so they are read now and a bad one is a usage error.
    mcp = loadMcpConfig({ home: path.dirname(homeFolder(env)), projectTrusted: false, files: mcpConfigFiles, env });
  } catch (error) {
    if (error instanceof McpConfigError) throw new CliUsageError(`${error.message}.`);
    throw error;
  }
  // #endregion
  const common = {
    kind: "run" as const,
    mode,
    json,
    color: useColor,
    dropToolResult,
    session,
    contextFiles,
    extensions: extensionFiles,
    ...(approve !== undefined && { approve }),
    ...(config.file !== undefined && { configFile: config.file }),
    ...(contextTokens !== undefined && { contextTokens }),
    // #region ch17
    mcpServers: mcp.servers,
    mcpNotices: mcp.notices,
    mcpConfigFiles,
    // #endregion
    // #region ch16
    codemode,
    // #endregion
    // #region ch18
    ...(thinking !== undefined && { thinking }),
    modelsFile: path.join(homeFolder(env), "models.json"),
    // #endregion
  };
  if (!onServer) {
    const serverOnly = [model, cwd, flags.apiKeyEnv, apiKeyFile, promptFile].some((v) => v !== undefined);
    if (serverOnly || (positional.length > 0 && mode !== "interactive")) {
      throw new CliUsageError(
        "the offline demo plays a fixed script in a fresh temporary folder; --model, --cwd, " +
          "--api-key-env, --api-key-file, --prompt-file and a task need --base-url (a real server).",
      );
    }
    return { ...common, folder: path.resolve(from), ...(positional.length > 0 && { task: positional.join(" ") }) };
  }
  let shownBaseUrl: string | undefined;
  if (baseUrl !== undefined) {
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
    shownBaseUrl = baseUrl.replace(/\/+$/, "");
  }
  let needs = baseUrl !== undefined ? "--base-url" : "--provider anthropic";
  // #region ch18
  if (route !== undefined) needs = `--model ${model}`;
  // #endregion
  if (model === undefined || model === "") {
    throw new CliUsageError(`${needs} needs --model NAME (the model id the server knows).`);
  }
  if (cwd === undefined) {
    throw new CliUsageError(`${needs} needs --cwd DIR: name the folder the agent may work in.`);
  }
  if (cwd.trim() === "") {
    throw new CliUsageError('--cwd "" names no folder; give one (write --cwd . for the current folder).');
  }
  const workspace = path.resolve(from, cwd);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) {
    throw new CliUsageError(`the workspace ${workspace} does not exist or is not a folder (--cwd).`);
  }
  const task = hasTask
    ? (promptFile === undefined ? positional.join(" ") : readText("--prompt-file", promptFile, from)).trim()
    : undefined;
  if (task === "" || (task === undefined && mode !== "interactive")) {
    throw new CliUsageError(
      promptFile === undefined
        ? 'give the task as an argument, e.g. "list the files and summarise them", or with --prompt-file PATH ' +
            "(or run on a terminal without a task to talk to the agent)."
        : `the task file ${promptFile} is empty (--prompt-file).`,
    );
  }
  const apiKeyEnv = settings.apiKeyEnv?.value;
  if (apiKeyFile !== undefined && (noApiKey || flags.apiKeyEnv !== undefined)) {
    throw new CliUsageError("--api-key-file cannot be combined with --api-key-env or --no-api-key: choose one.");
  }
  let apiKey: string | undefined;
  // #region ch18
  let keys: Record<string, string> | undefined;
  // #endregion
  if (apiKeyFile !== undefined) {
    apiKey = readText("--api-key-file", apiKeyFile, from).split(/\r?\n/)[0]!.trim();
    if (apiKey === "")
      throw new CliUsageError(`no API key: the first line of ${apiKeyFile} is empty (--api-key-file).`);
  }
  // #region ch18
  else if (!noApiKey && route !== undefined && apiKeyEnv === undefined) {
    keys = catalogueKeys(route, env);
    const first = route.endpoints[0]!.apiKeyEnv;
    if (first !== undefined) apiKey = keys[first];
  }
  // #endregion
  else if (!noApiKey) {
    const name = apiKeyEnv ?? DEFAULT_KEY_VARIABLE[provider];
    apiKey = env[name];
    if (apiKey === undefined || apiKey === "") {
      const shown = looksLikeVariableName(name)
        ? `$${name}`
        : `the variable --api-key-env names (${describeValue(name)}, not shown: it looks like a key, not a variable name)`;
      throw new CliUsageError(
        `no API key: ${shown} is not set. Set it, name another variable with --api-key-env NAME, ` +
          `or pass --no-api-key for a local server that needs none.`,
      );
    }
  }
  return {
    ...common,
    folder: workspace,
    ...(task !== undefined && { task }),
    server: {
      provider,
      ...(shownBaseUrl !== undefined && { baseUrl: shownBaseUrl }),
      model,
      ...(apiKey !== undefined && { apiKey }),
      ...(apiKeyEnv !== undefined && { apiKeyEnv }),
      workspace,
      // #region ch18
      ...(route !== undefined && { byCatalogue: true }),
      ...(keys !== undefined && { keys }),
      // #endregion
    },
  };
}

/**
 * Whether `name` looks like an environment variable's name (`OPENAI_API_KEY`, `GROQ_KEY`, `KEY`)
 * rather than a key pasted in its place: upper case, digits and underscores, and either an
 * underscore or at most 12 characters.
 */
function looksLikeVariableName(name: string): boolean {
  return /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/.test(name) && (name.includes("_") || name.length <= 12);
}

/** An unknown option as a message shows it: without a value glued on with "=", and at most 40 characters. */
function shownOption(arg: string): string {
  const at = arg.indexOf("=");
  if (at !== -1) return `${arg.slice(0, Math.min(at, 40))}=… (value not shown)`;
  return arg.length > 40 ? `${arg.slice(0, 40)}… (${arg.length} characters)` : arg;
}

/** Reads the file an option names (`-`: stdin, to its end); a usage error says what failed. */
function readText(option: string, file: string, from: string): string {
  try {
    return readFileSync(file === "-" ? 0 : path.resolve(from, file), "utf8");
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new CliUsageError(`${option} ${file}: cannot read it (${why}).`);
  }
}

/** `url` with any `user:password@` replaced by `***@`, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/?#\s]*@/i, "$1***@");
}
// #region ch18

/** Where a catalogue name's models are reached: the first model's server is the run's. */
export interface CatalogueRoute {
  /** One per model of the name that the catalogue knows, in fallback order (the first is the name's first). */
  endpoints: ModelEndpoint[];
}

/** The user's models file: `~/.pi-course/models.json`. */
export function modelsFilePath(env: NodeJS.ProcessEnv): string {
  return path.join(homeFolder(env), "models.json");
}

/**
 * The server and key a catalogue name picks. With a model named and neither a base URL nor a
 * provider set (by flag, environment or config file: those still win), a name whose first model
 * the catalogue knows (a model, a virtual model, or `a,b`) is reached where its provider is, with
 * its provider's key variable (the built-in providers' endpoints, overridden by
 * `~/.pi-course/models.json`). Undefined otherwise: the base URL, provider and key variable are
 * the settings' (flag, environment, config file, default). Throws
 * `ModelsFileError` for a models file that cannot be used.
 */
export function catalogueRoute(
  settings: Partial<Record<SettingName, Setting>>,
  env: NodeJS.ProcessEnv,
): CatalogueRoute | undefined {
  if (settings.baseUrl !== undefined || settings.provider !== undefined) return undefined;
  const name = settings.model?.value;
  if (name === undefined || name.trim() === "") return undefined;
  const catalogue = loadModelsFileSync(ModelCatalogue.builtin(), modelsFilePath(env));
  const members = catalogue.members(name);
  if (members[0] === undefined || catalogue.endpoint(members[0]) === undefined) return undefined;
  return { endpoints: members.flatMap((m) => catalogue.endpoint(m) ?? []) };
}

/**
 * The keys a route needs, by variable: one per variable its models name. A variable that is not
 * set is a usage error that names it, and the model and server it is for.
 */
function catalogueKeys(route: CatalogueRoute, env: NodeJS.ProcessEnv): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const endpoint of route.endpoints) {
    const name = endpoint.apiKeyEnv;
    if (name === undefined || keys[name] !== undefined) continue;
    const key = env[name];
    if (key === undefined || key === "") {
      throw new CliUsageError(
        `no API key: $${name} is not set (${endpoint.model} is served by ${endpoint.provider} at ${endpoint.baseUrl}). ` +
          "Set it, name another variable with --api-key-env NAME, or pass --no-api-key for a local server that needs none.",
      );
    }
    keys[name] = key;
  }
  return keys;
}

/**
 * Every key variable `argv` will read (the launcher hands over exactly these): `keyVariable`'s,
 * and with a catalogue route each model's provider's. Never throws.
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
    for (const endpoint of catalogueRoute(settings, env)?.endpoints ?? []) {
      if (endpoint.apiKeyEnv !== undefined && !names.includes(endpoint.apiKeyEnv)) names.push(endpoint.apiKeyEnv);
    }
  } catch {
    // parseArgs reports it.
  }
  return names;
}
// #endregion
// #region ch16

/**
 * The codemode setting's value (`--codemode` gives "on"; `$PI_COURSE_CODEMODE`, `"codemode"`):
 * `1`, `on`, `true` (any case) turn it on, `0`, `off`, `false` or nothing leave it off; anything
 * else is a usage error `${subject} must be 1, on or true (or 0, off, false), got "…".`, where
 * `subject` says where the value came from (`$PI_COURSE_CODEMODE`, or `"codemode" in FILE`).
 */
export function codemodeOf(text: string | undefined, subject: string): boolean {
  const value = text?.trim().toLowerCase();
  if (value === undefined || value === "" || value === "0" || value === "off" || value === "false") return false;
  if (value === "1" || value === "on" || value === "true") return true;
  throw new CliUsageError(`${subject} must be 1, on or true (or 0, off, false), got "${value.slice(0, 12)}".`);
}
// #endregion
