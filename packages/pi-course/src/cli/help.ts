/**
 * The text of `npm start -- --help`: every mode, option and setting, and where each setting comes
 * from (the table is config.ts's, so it cannot drift from what is read).
 */
import { settingsHelp } from "./config.js";

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

Modes:
  (a terminal, no task) interactive: type a message and press Enter; the answer streams in,
                       tool calls show with the first lines of their result. While the agent
                       works, Enter sends your text as steering (it lands after the current tool
                       batch), Alt-Enter or /later TEXT queues it for when the agent would stop.
                       Ctrl-C stops the run, a second Ctrl-C exits; up-arrow recalls earlier
                       prompts. Commands: /help /new /sessions /resume ID /compact /model [NAME]
                       /later TEXT /tree /fork N /label TEXT /export [FILE] /exit
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
  -h, --help           this text

Sessions: every run appends its messages to a session file under
~/.pi-course/sessions/<hash of the working folder>/ (the working folder: --cwd, or the folder
npm start ran in for the demo).
  --session-dir DIR    keep the sessions under DIR instead of ~/.pi-course/sessions
  -c, --continue       go on with the newest session of the working folder
  -r, --resume ID      go on with session ID (its first characters are enough)
  --no-session         keep nothing

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
