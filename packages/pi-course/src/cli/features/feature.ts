/**
 * The seam a feature of the command line plugs into: its options (with their help text), what it
 * adds to the parsed options, its usage lines, and its part of the conversation (slash commands,
 * completion, what it says after a run). Each feature is one module under `features/`,
 * listed once in `features/index.ts`; `parseArgs` and `--help` read the same list, so an option and
 * its help cannot drift apart.
 *
 * Contract: a feature never reads argv itself; it reads what the option table parsed
 * (`ParsedInput`), and throws `CliUsageError` for a value it cannot use.
 */
import type { Chat, SlashCommand } from "../chat-commands.js";
import type { Setting, SettingName, Settings } from "../config.js";
import type { Runtime } from "../runtime.js";
import type { RunOptions } from "../run-options.js";

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

/** One feature's part of the command line. */
export interface CliFeature {
  /** Its name (the chapter's topic: `"codemode"`). */
  name: string;
  /** Its options and help topics, in the order `--help` shows them. */
  options?: readonly OptionSpec[];
  /** Usage lines of its own commands (`npm start -- eval …`), printed as they are. */
  usage?: string;
  /** What it adds to the options of a run. Throws `CliUsageError`. */
  parse?(input: ParsedInput): Partial<RunOptions>;
  /** Its slash commands in a conversation (one named as a core command replaces it). */
  commands?: readonly SlashCommand[];
  /** Tab completion of a conversation's line, when it knows the line (`/model gpt`): the candidates and the part completed. */
  complete?(runtime: Runtime, line: string): [string[], string] | undefined;
  /** Called once when a conversation starts, before its first prompt. */
  startChat?(chat: Chat): void;
  /** Called after each run of a conversation, before the prompt line comes back. */
  afterRun?(chat: Chat): void;
}
