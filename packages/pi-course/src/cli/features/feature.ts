/**
 * The seam a feature of the command line plugs into: its options (with their help text), what it
 * adds to the parsed options, its usage lines, the server it may pick, what it sets up on the
 * runtime (`RuntimeFeature`: tools it adds or wraps, what it starts and stops), its part of the
 * conversation (slash commands, completion, what it says after a run) and of the other modes. Each
 * feature is one module under `features/`, listed once in `features/index.ts`; `parseArgs`,
 * `--help`, the launcher, `main.ts`, the runtime and the conversation call every feature of that
 * list through one loop, so a later chapter plugs in instead of patching them.
 *
 * Contract: a feature never reads argv itself (except `handOver`, which the launcher calls before
 * anything is parsed, and must not throw); it reads what the option table parsed (`ParsedInput`),
 * and throws `CliUsageError` for a value it cannot use.
 */
import type { Chat, SlashCommand } from "../chat-commands.js";
import type { Setting, SettingName, Settings } from "../settings.js";
import type { Model } from "../../model.js";
import type { Runtime, RuntimeFeature } from "../runtime.js";
import type { Provider, RunOptions, ServerOptions } from "../run-options.js";

/** The part of `--help` an entry is printed in. */
export type HelpSection = "modes" | "options" | "help" | "sessions" | "project";

/** One line of `--help` (an option, or a topic such as "Skills") and, for an option, how it is parsed. */
export interface OptionSpec {
  /** The long name without `--` (`"base-url"`); absent for a topic that only explains. */
  name?: string;
  /** One letter: `-p`. */
  short?: string;
  /** The value's placeholder (`"URL"`): the option takes a value. Absent: a switch. */
  value?: string;
  /** The setting the option gives (a string option's value, or `settingValue` for a switch). */
  setting?: SettingName;
  /** What a switch gives its setting (`--codemode` gives "on"). */
  settingValue?: string;
  /** The left column when it is not `-s, --name VALUE` (a topic, or `--color / --no-color`). */
  label?: string;
  section: HelpSection;
  /** The right column; `\n` starts a new line at the column's indentation. */
  help: string;
}

/** What the option table parsed, for a feature to read. */
export interface ParsedInput {
  /** Each option given, by long name: a switch's `true`, or its values in order. */
  readonly values: ReadonlyMap<string, readonly (string | true)[]>;
  readonly settings: Partial<Record<SettingName, Setting>>;
  /** The flags' share of the settings. */
  readonly flags: Settings;
  readonly env: NodeJS.ProcessEnv;
  /** Where relative paths start (`$INIT_CWD`, else the current folder). */
  readonly from: string;
  /** The config file read, if any. */
  readonly configFile?: string;
  /** " (from $VAR)" or ' (from "key" in FILE)' for a setting not given by its flag; "" otherwise. */
  blame(name: SettingName): string;
  /** The sessions part of the options (undefined with `--no-session`). */
  readonly session: RunOptions["session"];
}

/**
 * The server a feature's settings pick when neither a base URL nor a provider is set (a model
 * catalogue's name alone picks its server and key).
 */
export interface ServerRoute {
  provider: Provider;
  baseUrl: string | undefined;
  /** What named the server, as a message says it: `--model deepseek-chat`. */
  namedBy: string;
  /** The key variable of the run's first model, if it needs a key. */
  firstKey: string | undefined;
  /** Every key variable its models read, in order. */
  keyVariables: readonly string[];
  /** The server's key options when no key option is given; a missing key is a `CliUsageError`. */
  keys(env: NodeJS.ProcessEnv): Partial<ServerOptions>;
  /** What it adds to the server's options. */
  server: Partial<ServerOptions>;
}

/** What the trust decision gave, for a feature whose project files load only in a trusted folder. */
export interface TrustDecision {
  trusted: boolean;
  /** The protected files found (every feature's `projectFiles`). */
  files: readonly string[];
  env: NodeJS.ProcessEnv;
}

/** One feature's part of the command line. */
export interface CliFeature extends RuntimeFeature {
  /** Its name (the chapter's topic: `"codemode"`). */
  name: string;
  /** Its options and help topics, in the order `--help` shows them. */
  options?: readonly OptionSpec[];
  /** Usage lines of its own commands (`npm start -- eval …`), printed as they are. */
  usage?: string;
  /** What it adds to the options of a run. Throws `CliUsageError`. */
  parse?(input: ParsedInput): Partial<RunOptions>;
  /** The server `settings` pick, if this feature picks one; throws `CliUsageError` for a file it cannot use. */
  route?(settings: Partial<Record<SettingName, Setting>>, env: NodeJS.ProcessEnv): ServerRoute | undefined;
  /** Variables the agent process needs that the launcher keeps from its environment (handed over as the key is). Never throws. */
  handOver?(argv: readonly string[], env: NodeJS.ProcessEnv): readonly string[];
  /** Files of the project it loads only in a trusted folder: they join the trust question. */
  projectFiles?(options: RunOptions): readonly string[];
  /** Once the trust decision is made: what it changes in the options. */
  afterTrust?(options: RunOptions, decision: TrustDecision): Partial<RunOptions>;
  /** The model as the banner shows it, when this feature chose it. */
  modelLabel?(runtime: Runtime): string | undefined;
  /** With `--json`: fields added to the `agent_end` line. */
  agentEndFields?(runtime: Runtime): Record<string, unknown> | undefined;
  /** The model the eval harness runs a case on against a server: the feature may wrap it (price it). */
  caseModel?(model: Model): Model;
  /** Lines said after a successful run of the trace and print modes (before the answer). */
  afterOnce?(runtime: Runtime): readonly string[];
  /** Its slash commands in a conversation (one named as a core command replaces it). */
  commands?: readonly SlashCommand[];
  /** Tab completion of a conversation's line, when it knows the line (`/model gpt`): the candidates and the part completed. */
  complete?(runtime: Runtime, line: string): [string[], string] | undefined;
  /** Called when a conversation has opened a session (at its start, and after `/resume`), before it is shown. */
  opened?(chat: Chat): Promise<void>;
  /** Called after each run of a conversation, before the prompt line comes back. */
  afterRun?(chat: Chat): void;
}
