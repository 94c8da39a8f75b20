/**
 * The options of `npm start`, as one table: `readArgv` parses argv with it and `helpLines` prints
 * it, so an option and its help cannot drift apart. The table is the core options followed by
 * each feature's (`features/index.ts`).
 *
 * Parsing uses `node:util`'s `parseArgs` (in Node since 18.3, stable in 20: no dependency to
 * keep), in its lenient mode with `tokens`, so each option is seen in order with the text it was
 * written as, and every mistake is reported in this program's own words.
 */
import { parseArgs as parseArgv } from "node:util";
import type { Settings } from "./settings.js";
import type { CliFeature, HelpSection, OptionSpec } from "./features/feature.js";
import * as registry from "./features/index.js";
import { CliUsageError } from "./usage-error.js";

/** The core entries of `--help` (not a feature's), in the order it shows them. */
const CORE_OPTIONS: readonly OptionSpec[] = [
  {
    label: "(a terminal, no task)",
    section: "modes",
    help: `interactive: type a message and press Enter; the answer streams in,
tool calls show with the first lines of their result. While the agent
works, Enter sends your text as steering (it lands after the current tool
batch), Alt-Enter or /later TEXT queues it for when the agent would stop.
Ctrl-C stops the run, a second Ctrl-C exits; up-arrow recalls earlier
prompts. Commands: /help /new /sessions /resume ID /compact /model [NAME]
/later TEXT /tree /fork N /label TEXT /export [FILE] /skills
/skill:NAME /exit, the templates' /NAME and the extensions' commands`,
  },
  { label: "(a task, or piped)", section: "modes", help: "the trace: every event, one line each, then the answer" },
  {
    name: "print",
    short: "p",
    section: "modes",
    help: "only the final answer on stdout (exit code 1 if the run ends in error)",
  },
  {
    name: "json",
    section: "modes",
    help: `one JSON event per line (agent, turn, message and tool events);
message_update lines carry only the model event (e.g. a text_delta),
without the partial message, so the output stays linear in the answer's
size; message_end carries the whole message. Nothing else on stdout`,
  },
  {
    name: "interactive",
    short: "i",
    section: "modes",
    help: "the conversation even with a task (it is the first prompt); needs a terminal",
  },
  {
    name: "provider",
    value: "NAME",
    setting: "provider",
    section: "options",
    help: `openai (default: any OpenAI-compatible Chat Completions server) or
anthropic (Messages API; --base-url defaults to https://api.anthropic.com)`,
  },
  {
    name: "base-url",
    value: "URL",
    setting: "baseUrl",
    section: "options",
    help: `e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1 (llama.cpp),
http://127.0.0.1:11434/v1 (Ollama)`,
  },
  {
    name: "model",
    value: "NAME",
    setting: "model",
    section: "options",
    help: "the model id the server knows, e.g. gpt-4o-mini",
  },
  { name: "cwd", value: "DIR", section: "options", help: "the workspace the tools may touch (required with a server)" },
  {
    name: "api-key-env",
    value: "NAME",
    setting: "apiKeyEnv",
    section: "options",
    help: `read the API key from $NAME instead of $OPENAI_API_KEY (--provider
openai) or $ANTHROPIC_API_KEY (--provider anthropic)`,
  },
  {
    name: "api-key-file",
    value: "PATH",
    section: "options",
    help: `read the API key from a file (first line; - reads stdin), so it is in
no process's environment at all, e.g. --api-key-file <(pass show openai)`,
  },
  { name: "no-api-key", section: "options", help: "send no key (local servers that need none)" },
  {
    name: "prompt-file",
    value: "PATH",
    section: "options",
    help: "read the task from a file (- reads stdin) instead of the arguments",
  },
  {
    name: "color",
    label: "--color / --no-color",
    section: "options",
    help: `force colour on or off (default: colour on a terminal, plain when piped;
NO_COLOR is honoured)`,
  },
  { name: "no-color", section: "options", label: "", help: "" },
  {
    name: "drop-tool-result",
    section: "options",
    help: `chapter 00's break-it experiment: hide the first tool result from the
model and watch the pairing check stop the run`,
  },
  {
    name: "context-tokens",
    value: "N",
    setting: "contextTokens",
    section: "options",
    help: `the context budget: each model call sees at most about N tokens (the
oldest whole exchanges are left out), and a session is compacted into a
summary when it nears N (default: no budget; at least 1000)`,
  },
  {
    name: "config",
    value: "PATH",
    section: "options",
    help: "the config file (default ~/.pi-course/config.json if it exists)",
  },
  { name: "help", short: "h", section: "help", help: "this text" },
  { name: "version", section: "help", help: "the version of pi-course" },
  {
    name: "session-dir",
    value: "DIR",
    setting: "sessionDir",
    section: "sessions",
    help: "keep the sessions under DIR instead of ~/.pi-course/sessions",
  },
  { name: "continue", short: "c", section: "sessions", help: "go on with the newest session of the working folder" },
  {
    name: "resume",
    short: "r",
    value: "ID",
    section: "sessions",
    help: "go on with session ID (its first characters are enough)",
  },
  { name: "no-session", section: "sessions", help: "keep nothing" },
  {
    label: "Context files",
    section: "project",
    help: `AGENTS.md (or CLAUDE.md where a folder has none) of ~/.pi-course and of
every folder from / down to the working folder, outermost first, each
in the system prompt with its path; a file over 64 KB is cut with a note.
Plain text: no trust needed.`,
  },
  { name: "no-context-files", section: "project", help: "leave them out" },
  {
    label: "Skills",
    section: "project",
    help: `folders with a SKILL.md (Agent Skills: YAML frontmatter with name and
description; optional license, compatibility, metadata, allowed-tools,
disable-model-invocation; scripts/, references/, assets/) in the
project's .pi-course/skills/ and .agents/skills/ from the working folder
up to the git root, then ~/.pi-course/skills/ and ~/.agents/skills/; the
first of a name wins. The model sees each skill's name, description and
location, and activates one with the read-only skill tool;
/skills lists them, /skill:NAME [ARGS] activates one for the model.`,
  },
  {
    label: "Templates",
    section: "project",
    help: `NAME.md in .pi-course/prompts/ (the project's wins) and
~/.pi-course/prompts/: /NAME ARGS sends the file with $1 $2 …, $@,
$ARGUMENTS, \${1:-default}, \${@:2} filled in (arguments are split as a
shell splits words; what is filled in is not expanded again). Optional
frontmatter: description, argument-hint`,
  },
  {
    label: "Extensions",
    section: "project",
    help: `ES modules (.ts, .js, .mjs, or a folder's index.*) in
~/.pi-course/extensions/ and .pi-course/extensions/, whose default export
is a function (api) => void; api.registerTool, api.registerCommand,
api.beforeToolCall (a check that throws, denies or times out blocks the
call), api.afterToolCall, api.addSystemPrompt. They run in the agent's
process with your rights.`,
  },
  {
    name: "extension",
    value: "PATH",
    section: "project",
    help: `load this extension too (repeatable). Options an extension adds
(registerFlag) are read once it has loaded; its banner line lists them`,
  },
  {
    label: "Trust",
    section: "project",
    help: `the project's skills, templates, extensions and MCP servers load only for a
trusted folder (its git root, else the working folder). On a terminal you are
asked once; the answer is kept in ~/.pi-course/trust.json, where the
closest folder's decision wins. With --print, --json or piped, an
undecided folder's project resources are skipped (and the run says so).
Nothing of an untrusted folder's extensions is imported.`,
  },
  { name: "approve", section: "project", help: "trust the project for this run (nothing saved)" },
  { name: "no-approve", section: "project", help: "do not trust it for this run (nothing saved)" },
];

/** The features of later chapters (features/index.ts), in the order of their names. */
export const FEATURES: readonly CliFeature[] = Object.values<CliFeature>(registry);

/** Every entry of `--help`: the core ones, then each feature's in the order `FEATURES` lists them. */
export const OPTIONS: readonly OptionSpec[] = [...CORE_OPTIONS, ...FEATURES.flatMap((f) => f.options ?? [])];

/** Where the help text's right column starts. */
const COLUMN = 23;

/** The lines of `--help` for one section, each entry as `  LABEL  HELP` with the help's lines aligned. */
export function helpLines(section: HelpSection): string {
  let text = "";
  for (const spec of OPTIONS) {
    if (spec.section !== section || spec.label === "") continue;
    const label = spec.label ?? optionLabel(spec);
    const lines = spec.help.split("\n");
    text += `  ${label.padEnd(COLUMN - 3)} ${lines.join(`\n${" ".repeat(COLUMN)}`)}\n`;
  }
  return text;
}

function optionLabel(spec: OptionSpec): string {
  const long = `--${spec.name}${spec.value === undefined ? "" : ` ${spec.value}`}`;
  return spec.short === undefined ? long : `-${spec.short}, ${long}`;
}

/** argv as the table reads it. */
export interface ReadArgv {
  help: boolean;
  /** `--version` was given (what follows is not read). */
  version?: true;
  /** Each option given, by long name, every time it is given, in order (`true` for a switch). */
  values: Map<string, (string | true)[]>;
  /** The option of `names` given last, if any (`--color` / `--no-color`). */
  last(...names: string[]): string | undefined;
  /** The settings the flags give. */
  flags: Settings;
  positionals: string[];
  /** With `unknown: "collect"`: the unknown long options given (`--NAME`), each once, in order. */
  unknown: string[];
}

/** How `readArgv` reads options beyond the table. */
export interface ReadArgvOptions {
  /** More options (the extensions' flags), read as the table's are. */
  extra?: readonly OptionSpec[];
  /**
   * `"throw"` (the default): an unknown option is a `CliUsageError`. `"collect"`: an unknown
   * `--NAME` is listed in `unknown` instead (an extension may add it; the CLI reads argv again
   * once extensions have loaded); a value after it is read as a positional meanwhile.
   */
  unknown?: "throw" | "collect";
}

/**
 * Reads `argv` with the option table (and `how.extra`). Stops at `-h`/`--help` or `--version`
 * (what follows is not read). Throws `CliUsageError` for an unknown option (unless `how.unknown` collects it) (also `--name=value`, grouped short options and `--`; a
 * value glued on with `=` is never shown), and for an option whose value is missing or starts
 * with `--`.
 */
export function readArgv(argv: readonly string[], how: ReadArgvOptions = {}): ReadArgv {
  const byName = new Map(
    [...OPTIONS, ...(how.extra ?? [])].flatMap((spec) => (spec.name === undefined ? [] : [[spec.name, spec] as const])),
  );
  const options = Object.fromEntries(
    [...byName.values()].map((spec) => [
      spec.name!,
      { type: spec.value === undefined ? "boolean" : "string", ...(spec.short !== undefined && { short: spec.short }) },
    ]),
  ) as Record<string, { type: "boolean" | "string"; short?: string }>;
  const { tokens } = parseArgv({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const values = new Map<string, (string | true)[]>();
  const order: string[] = [];
  const flags: Settings = {};
  const positionals: string[] = [];
  const unknown: string[] = [];
  for (const token of tokens) {
    const written = argv[token.index]!;
    if (token.kind === "option-terminator") throw new CliUsageError(`unknown option ${shownOption(written)}.`);
    if (token.kind === "positional") {
      if (written.startsWith("-")) throw new CliUsageError(`unknown option ${shownOption(written)}.`);
      positionals.push(written);
      continue;
    }
    const spec = byName.get(token.name);
    if (
      spec === undefined &&
      how.unknown === "collect" &&
      written === `--${token.name}` &&
      token.inlineValue !== true
    ) {
      if (!unknown.includes(written)) unknown.push(written);
      continue;
    }
    if (spec === undefined || token.inlineValue === true || written !== token.rawName) {
      throw new CliUsageError(`unknown option ${shownOption(written)}.`);
    }
    if (spec.name === "help") return { help: true, values, last: () => undefined, flags, positionals, unknown };
    if (spec.name === "version")
      return { help: false, version: true, values, last: () => undefined, flags, positionals, unknown };
    let value: string | true = true;
    if (spec.value !== undefined) {
      if (token.value === undefined || token.value.startsWith("--")) {
        throw new CliUsageError(`${token.rawName} needs a value.`);
      }
      value = token.value;
    }
    values.set(spec.name!, [...(values.get(spec.name!) ?? []), value]);
    order.push(spec.name!);
    if (spec.setting !== undefined) flags[spec.setting] = value === true ? spec.settingValue : value;
  }
  const last = (...names: string[]) => [...order].reverse().find((name) => names.includes(name));
  return { help: false, values, last, flags, positionals, unknown };
}

/** An unknown option as a message shows it: without a value glued on with "=", and at most 40 characters. */
function shownOption(arg: string): string {
  const at = arg.indexOf("=");
  if (at !== -1) return `${arg.slice(0, Math.min(at, 40))}=… (value not shown)`;
  return arg.length > 40 ? `${arg.slice(0, 40)}… (${arg.length} characters)` : arg;
}
