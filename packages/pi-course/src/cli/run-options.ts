/**
 * What `npm start` was asked for, once its command line is parsed (args.ts). A feature of a later
 * chapter adds its own fields to `RunOptions`, `SessionOptions` or `ServerOptions` from its module
 * under `features/` (TypeScript's interface merging), so this file names only what the runtime of
 * chapter 13 needs.
 */

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

/** The smallest `--context-tokens`: below it the system prompt and the tools' answers hardly fit. */
export const MIN_CONTEXT_TOKENS = 1_000;

/** Where the sessions are kept, and which one to go on with. */
export interface SessionOptions {
  /** Holds one folder per working folder. */
  root: string;
  /** `--continue`: the newest session of `folder`. */
  continue: boolean;
  /** `--resume ID`: that session (an id or its start). */
  resume?: string;
}

/** The server a run talks to. */
export interface ServerOptions {
  provider: Provider;
  /** Absent for Anthropic: its public endpoint. */
  baseUrl?: string;
  /** The model id; "" when it comes from the resumed session (`modelFrom: "session"`). */
  model: string;
  /**
   * Where the model came from: `--model` (it wins over a resumed session's choice, with a note),
   * an environment variable or the config file (a resumed session's choice wins over it), or none
   * given with `--continue` / `--resume` (the session's choice, found as the run starts).
   */
  modelFrom?: "flag" | "setting" | "session";
  apiKey?: string;
  /** The variable named by `--api-key-env` (or the config file), if any: the commands never see it. */
  apiKeyEnv?: string;
  workspace: string;
}

/** A run as the user asked for it. */
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
  session?: SessionOptions;
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
  /** Options given that the table does not know (`--NAME`): an extension may add them. */
  unknownOptions?: string[];
  /** The extensions' flags given, by name (read once extensions have loaded). */
  extensionFlags?: ReadonlyMap<string, string | true>;
  /** Absent: the offline demo on the scripted model. */
  server?: ServerOptions;
}

/** What the user asked for. */
export type CliOptions = { kind: "help" } | { kind: "version" } | RunOptions;
