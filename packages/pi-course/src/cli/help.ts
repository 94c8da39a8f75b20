/**
 * The text of `npm start -- --help`: every mode, option and setting, and where each setting comes
 * from (the table is config.ts's, so it cannot drift from what is read).
 */
import { settingsHelp } from "./config.js";

/**
 * How the person started this program, as the usage lines should name it: `npm start --` when
 * npm runs the start script of @pi/course (inside the repository), else `pi-course` (the bin an
 * installed package puts on the PATH, or `npx pi-course`).
 */
export function commandName(env: NodeJS.ProcessEnv): "npm start --" | "pi-course" {
  return env.npm_lifecycle_event === "start" && env.npm_package_name === "@pi/course" ? "npm start --" : "pi-course";
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
/** Usage lines of later chapters' commands, each added inside its chapter's region. */
const LATER_USAGE: string[] = [];
// #region ch14
LATER_USAGE.push(`  npm start -- eval SUITE [--repeat K] [--concurrency N] [--out DIR]
                                              run every case of an eval suite (offline on the
                                              cases' scripts, or with --base-url as above) and
                                              judge it (eval --help says it all)
`);
// #endregion
/** Session options of later chapters, each added inside its chapter's region. */
const LATER_SESSION_OPTIONS: string[] = [];
// #region ch19
LATER_SESSION_OPTIONS.push(`  --no-recover         a run the session left unfinished (killed mid-way) is recorded as it
                       stands, nothing runs again, and it is not continued (by default it is
                       recovered, told, and goes on before the new prompt; the interactive mode
                       asks first, and this flag skips the question)
`);
// #endregion
/** Options of later chapters, each added inside its chapter's region (lines of the Options list). */
const LATER_OPTIONS: string[] = [];
// #region ch17
LATER_OPTIONS.push(`  --mcp-config FILE    start the MCP servers of FILE ({"mcpServers": {"NAME": {"command",
                       "args", "env", "cwd"} | {"url", "headers"}}}, as other agents write it)
                       besides those of ~/.pi-course/mcp.json; repeatable, later files win.
                       Their tools are named mcp__NAME__TOOL; \${VAR} in "env" and "headers" is
                       read from the environment; /mcp shows each server's state. A project's
                       .pi-course/mcp.json starts only in a trusted folder (see Trust below)
                       With more than 20 MCP tools, they are deferred: the model finds them with
                       tool_search, and each is declared once found
`);
// #endregion
// #region ch16
LATER_OPTIONS.push(`  --codemode           add the code tool: the model writes one JavaScript snippet that calls
                       the other tools (await tools.NAME(args)) in a QuickJS sandbox in a worker
                       thread, each call checked like its own; also $PI_COURSE_CODEMODE=1 or
                       "codemode": "on" in the config file
`);
// #endregion
// #region ch18
LATER_OPTIONS.push(`  --thinking LEVEL     off, minimal, low, medium or high: how much the model thinks first
                       (reasoning_effort on OpenAI-compatible servers; a thinking budget of
                       1024/2048/8192/16384 tokens on Anthropic, max_tokens raised to fit);
                       ignored, with a note, where the model catalogue says it does not reason;
                       also $PI_COURSE_THINKING or "thinking" in the config file
  Models (chapter 18)  --model takes a name of the model catalogue (gpt-4o-mini, claude-sonnet-4-5,
                       deepseek-chat, qwen2.5-coder, …; others work with defaults and one note),
                       names separated by commas (a,b: the next when one fails before its first
                       byte: rate limit, overloaded, 5xx, refused), or a virtual model of
                       ~/.pi-course/models.json ({"models": […], "virtual": {"NAME": ["a", "b"]}}).
                       With no --base-url or --provider, a catalogue name picks its server and
                       key: deepseek-chat → https://api.deepseek.com/v1 with $DEEPSEEK_API_KEY
                       (openai $OPENAI_API_KEY, anthropic $ANTHROPIC_API_KEY, groq $GROQ_API_KEY,
                       openrouter $OPENROUTER_API_KEY, local: Ollama at 127.0.0.1:11434, no key;
                       "providers": {"NAME": {"baseUrl", "apiKeyEnv"}} in models.json moves them).
                       The context budget follows the model's window unless --context-tokens.
                       Each answer is priced from the catalogue (unknown prices stay unknown);
                       /model NAME (Tab completes), /thinking LEVEL and /cost in a conversation;
                       the choice is kept in the session, so --continue goes on with it
`);
// #endregion

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
${LATER_USAGE.join("")}
Modes:
  (a terminal, no task) interactive: type a message and press Enter; the answer streams in,
                       tool calls show with the first lines of their result. While the agent
                       works, Enter sends your text as steering (it lands after the current tool
                       batch), Alt-Enter or /later TEXT queues it for when the agent would stop.
                       Ctrl-C stops the run, a second Ctrl-C exits; up-arrow recalls earlier
                       prompts. Commands: /help /new /sessions /resume ID /compact /model [NAME]
                       /later TEXT /tree /fork N /label TEXT /export [FILE] /skills
                       /skill:NAME /exit, the templates' /NAME and the extensions' commands
  (a task, or piped)   the trace: every event, one line each, then the answer
  -p, --print          only the final answer on stdout (exit code 1 if the run ends in error)
  --json               one JSON event per line (agent, turn, message and tool events);
                       message_update lines carry only the model event (e.g. a text_delta),
                       without the partial message, so the output stays linear in the answer's
                       size; message_end carries the whole message. Nothing else on stdout
  -i, --interactive    the conversation even with a task (it is the first prompt); needs a terminal

Options:
  --provider NAME      openai (default: any OpenAI-compatible Chat Completions server) or
                       anthropic (Messages API; --base-url defaults to https://api.anthropic.com)
  --base-url URL       e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1 (llama.cpp),
                       http://127.0.0.1:11434/v1 (Ollama)
  --model NAME         the model id the server knows, e.g. gpt-4o-mini
  --cwd DIR            the workspace the tools may touch (required with a server)
  --api-key-env NAME   read the API key from $NAME instead of $OPENAI_API_KEY (--provider
                       openai) or $ANTHROPIC_API_KEY (--provider anthropic)
  --api-key-file PATH  read the API key from a file (first line; - reads stdin), so it is in
                       no process's environment at all, e.g. --api-key-file <(pass show openai)
  --no-api-key         send no key (local servers that need none)
  --prompt-file PATH   read the task from a file (- reads stdin) instead of the arguments
  --color / --no-color force colour on or off (default: colour on a terminal, plain when piped;
                       NO_COLOR is honoured)
  --drop-tool-result   chapter 00's break-it experiment: hide the first tool result from the
                       model and watch the pairing check stop the run
  --context-tokens N   the context budget: each model call sees at most about N tokens (the
                       oldest whole exchanges are left out), and a session is compacted into a
                       summary when it nears N (default: no budget; at least 1000)
  --config PATH        the config file (default ~/.pi-course/config.json if it exists)
${LATER_OPTIONS.join("")}  -h, --help           this text

Sessions: every run appends its messages to a session file under
~/.pi-course/sessions/<hash of the working folder>/ (the working folder: --cwd, or the folder
npm start ran in for the demo).
  --session-dir DIR    keep the sessions under DIR instead of ~/.pi-course/sessions
  -c, --continue       go on with the newest session of the working folder
  -r, --resume ID      go on with session ID (its first characters are enough)
  --no-session         keep nothing
${LATER_SESSION_OPTIONS.join("")}
The project around the agent (chapter 12): shown on start-up, every problem as a warning.
  Context files        AGENTS.md (or CLAUDE.md where a folder has none) of ~/.pi-course and of
                       every folder from / down to the working folder, outermost first, each
                       in the system prompt with its path; a file over 64 KB is cut with a note.
                       Plain text: no trust needed.
  --no-context-files   leave them out
  Skills               folders with a SKILL.md (Agent Skills: YAML frontmatter with name and
                       description; optional license, compatibility, metadata, allowed-tools,
                       disable-model-invocation; scripts/, references/, assets/) in the
                       project's .pi-course/skills/ and .agents/skills/ from the working folder
                       up to the git root, then ~/.pi-course/skills/ and ~/.agents/skills/; the
                       first of a name wins. The model sees each skill's name, description and
                       location, and activates one with the read-only skill tool;
                       /skills lists them, /skill:NAME [ARGS] activates one for the model.
  Templates            NAME.md in .pi-course/prompts/ (the project's wins) and
                       ~/.pi-course/prompts/: /NAME ARGS sends the file with $1 $2 …, $@,
                       $ARGUMENTS, \${1:-default}, \${@:2} filled in (arguments are split as a
                       shell splits words; what is filled in is not expanded again). Optional
                       frontmatter: description, argument-hint
  Extensions           ES modules (.ts, .js, .mjs, or a folder's index.*) in
                       ~/.pi-course/extensions/ and .pi-course/extensions/, whose default export
                       is a function (api) => void; api.registerTool, api.registerCommand,
                       api.beforeToolCall (a check that throws, denies or times out blocks the
                       call), api.afterToolCall, api.addSystemPrompt. They run in the agent's
                       process with your rights.
  --extension PATH     load this extension too (repeatable)
  Trust                the project's skills, templates, extensions and MCP servers load only for a
                       trusted folder (its git root, else the working folder). On a terminal you are
                       asked once; the answer is kept in ~/.pi-course/trust.json, where the
                       closest folder's decision wins. With --print, --json or piped, an
                       undecided folder's project resources are skipped (and the run says so).
                       Nothing of an untrusted folder's extensions is imported.
  --approve            trust the project for this run (nothing saved)
  --no-approve         do not trust it for this run (nothing saved)

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
