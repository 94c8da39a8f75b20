/**
 * The text of `npm start -- --help`: every mode, option and setting, and where each setting comes
 * from. Its options and settings are printed from the tables parsing reads (options.ts, settings.ts),
 * so the help cannot drift from what is read.
 */
import { settingsHelp } from "./settings.js";
import { FEATURES, helpLines } from "./options.js";

/**
 * How the person started this program, as the usage lines should name it: `npm start --` when
 * npm runs the start script of @pi/course (inside the repository), else `pi-course` (the bin an
 * installed package puts on the PATH, or `npx pi-course`).
 */
export function commandName(env: NodeJS.ProcessEnv): "npm start --" | "pi-course" {
  return env.npm_lifecycle_event === "start" && env.npm_package_name === "@pi/course" ? "npm start --" : "pi-course";
}

/** The version of @pi/course (package.json's; a test keeps them equal). */
export const VERSION = "0.1.0";

/** What `--version` prints. */
export function versionText(): string {
  return `pi-course ${VERSION}\n`;
}

/** `--help` for the command `commandName` names: HELP as it is, or with `pi-course` in its usage lines. */
export function helpText(command: "npm start --" | "pi-course"): string {
  if (command === "npm start --") return HELP;
  return HELP.replace(
    /\n {2}npm start -s -- --json {22}the same, one JSON event per line \(-s keeps\n {46}npm's "> start" lines off stdout: pure JSON\)/,
    "\n  pi-course --json                            the same, one JSON event per line",
  )
    .replace(/^npm start:/, "pi-course:")
    .replace(
      /^( {2})npm start(?: --)?( [^ ].*?)?( {2,})(\S.*)$/gm,
      (_all, indent: string, rest = "", _gap, text: string) => {
        const command = `${indent}pi-course${rest}`;
        return `${command.padEnd(Math.max(46, command.length + 2))}${text}`;
      },
    )
    .replace(/^( {2})npm start(?: --)?( .*)?$/gm, (_all, indent: string, rest = "") => `${indent}pi-course${rest}`)
    .replace(/\nnpm start ran in/, "\npi-course ran in");
}
export const HELP = `npm start: a coding agent you can talk to, and a live trace of every event of its lifecycle.

Usage:
  npm start                                   offline demo: a scripted model fixes a bug in a
                                              fresh temporary workspace (read, edit, run, answer);
                                              on a terminal a conversation that suggests that
                                              task, piped the trace of every event
  npm start -s -- --json                      the same, one JSON event per line (-s keeps
                                              npm's "> start" lines off stdout: pure JSON)
  npm start -- --base-url URL --model NAME --cwd DIR
                                              talk to a real OpenAI-compatible server on a
                                              terminal, with the coding tools (read, write, edit,
                                              ls, bash) confined to DIR
  npm start -- --base-url URL --model NAME --cwd DIR "TASK"
                                              one task, its trace (--print: only the answer)
  npm start -- --provider anthropic --model NAME --cwd DIR
                                              Anthropic's Messages API (key: $ANTHROPIC_API_KEY)
  npm start -- --base-url URL --model NAME --cwd DIR --prompt-file task.md
                                              the task from a file (- reads stdin): npm cannot
                                              pass an argument list longer than about 128 KB (it
                                              ends with exit code 249 and no message)
  npm start -- --continue                     go on with the newest conversation of this folder,
                                              on the branch you were last on
  npm start -- export SESSION_FILE [--out page.html]
                                              the session as one self-contained HTML page
                                              (default: beside the file, .jsonl -> .html)
${FEATURES.map((f) => f.usage ?? "").join("")}
Modes:
${helpLines("modes")}
Options:
${helpLines("options")}${helpLines("help")}
Sessions: every run appends its messages to a session file under
~/.pi-course/sessions/<hash of the working folder>/ (the working folder: --cwd, or the folder
npm start ran in for the demo).
${helpLines("sessions")}
The project around the agent (chapter 12): shown on start-up, every problem as a warning.
${helpLines("project")}
Where settings come from: a flag, else the environment, else the config file (JSON):
${settingsHelp()}
The key itself is never read from the config file: it names the variable ("apiKeyEnv").

Exit codes: 0 the run ended normally, 1 it ended with an error, 2 a usage error,
130 interrupted (Ctrl-C), 143 or 129 stopped by SIGTERM or SIGHUP.
The bash tool runs commands in DIR with a timeout and an output cap; it is not a sandbox.
Its commands never see OPENAI_API_KEY, ANTHROPIC_API_KEY, the variable named by --api-key-env,
or any variable whose name contains API_KEY, APIKEY, TOKEN, SECRET, PASSWORD or CREDENTIAL, in
their own environment or in the agent's. npm and the shell that ran it still hold what you
exported, and a command can read the environment of any process of its user: --api-key-file
keeps the key out of every environment.
`;
