/**
 * The command line of the main job (`npm start`): parsing and the help text.
 *
 * Parsing takes argv and the environment and gives options or a usage error; the only things it
 * reads besides are the files named by `--prompt-file` and `--api-key-file` (`-`: stdin).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** What the user asked for. */
export type CliOptions =
  | { kind: "help" }
  | {
      kind: "run";
      /** One JSON event per line instead of the readable trace. */
      json: boolean;
      /** Colour in the readable trace. */
      color: boolean;
      /** The break-it experiment of chapter 00: the model never sees the first tool result. */
      dropToolResult: boolean;
      /** Absent: the offline demo on the scripted model. */
      server?: {
        baseUrl: string;
        model: string;
        apiKey?: string;
        /** The variable named by `--api-key-env`, if any: the commands never see it. */
        apiKeyEnv?: string;
        workspace: string;
        task: string;
      };
    };

/** A mistake on the command line: printed with a pointer to `--help`, exit code 2. */
export class CliUsageError extends Error {
  override name = "CliUsageError";
}

/** What a usage error prints. */
export function usageMessage(error: CliUsageError): string {
  return `error: ${error.message}\nRun \`npm start -- --help\` for the options.\n`;
}

export const HELP = `npm start: run one complete agent, and watch every event of its lifecycle.

Usage:
  npm start                                   offline demo: a scripted model fixes a bug in a
                                              fresh temporary workspace (read, edit, run, answer)
  npm start -s -- --json                      the same, one JSON event per line (-s keeps
                                              npm's "> start" lines off stdout: pure JSON)
  npm start -- --base-url URL --model NAME --cwd DIR "TASK"
                                              a real OpenAI-compatible server, with the coding
                                              tools (read, write, edit, ls, bash) confined to DIR
  npm start -- --base-url URL --model NAME --cwd DIR --prompt-file task.md
                                              the task from a file (- reads stdin): npm cannot
                                              pass an argument list longer than about 128 KB (it
                                              ends with exit code 249 and no message)

Options:
  --base-url URL       Chat Completions base URL, e.g. https://api.openai.com/v1 or
                       http://127.0.0.1:8080/v1 (llama.cpp), http://127.0.0.1:11434/v1 (Ollama)
  --model NAME         the model id the server knows, e.g. gpt-4o-mini
  --cwd DIR            the workspace the tools may touch (required with --base-url)
  --api-key-env NAME   read the API key from $NAME instead of $OPENAI_API_KEY
  --api-key-file PATH  read the API key from a file (first line; - reads stdin), so it is in
                       no process's environment at all, e.g. --api-key-file <(pass show openai)
  --no-api-key         send no key (local servers that need none)
  --prompt-file PATH   read the task from a file (- reads stdin) instead of the arguments
  --json               print one JSON event per line (agent, turn, message and tool events);
                       message_update lines carry only the model event (e.g. a text_delta),
                       without the partial message, so the output stays linear in the answer's
                       size; message_end carries the whole message
  --color / --no-color force colour on or off (default: colour on a terminal, plain when piped;
                       NO_COLOR is honoured)
  --drop-tool-result   chapter 00's break-it experiment: hide the first tool result from the
                       model and watch the pairing check stop the run
  -h, --help           this text

Exit codes: 0 the run ended normally, 1 it ended with an error, 2 a usage error,
130 interrupted (Ctrl-C), 143 or 129 stopped by SIGTERM or SIGHUP.
The bash tool runs commands in DIR with a timeout and an output cap; it is not a sandbox.
Its commands never see OPENAI_API_KEY, the variable named by --api-key-env, or any variable
whose name contains API_KEY, APIKEY, TOKEN, SECRET, PASSWORD or CREDENTIAL, in their own
environment or in the agent's. npm and the shell that ran it still hold what you exported,
and a command can read the environment of any process of its user: --api-key-file keeps the
key out of every environment.
`;

/** Parses `argv` (without `node` and the script). Throws `CliUsageError`. */
export function parseArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  stdoutIsTTY: boolean,
): CliOptions {
  const positional: string[] = [];
  let json = false;
  let color: boolean | undefined;
  let dropToolResult = false;
  let noApiKey = false;
  let baseUrl: string | undefined;
  let model: string | undefined;
  let cwd: string | undefined;
  let apiKeyEnv: string | undefined;
  let apiKeyFile: string | undefined;
  let promptFile: string | undefined;
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
      case "--base-url":
        baseUrl = value();
        break;
      case "--model":
        model = value();
        break;
      case "--cwd":
        cwd = value();
        break;
      case "--api-key-env":
        apiKeyEnv = value();
        break;
      case "--api-key-file":
        apiKeyFile = value();
        break;
      case "--prompt-file":
        promptFile = value();
        break;
      default:
        if (arg.startsWith("-")) throw new CliUsageError(`unknown option ${arg}.`);
        positional.push(arg);
    }
  }
  const useColor = color ?? (stdoutIsTTY && env.NO_COLOR === undefined);
  const common = { kind: "run" as const, json, color: useColor, dropToolResult };
  if (baseUrl === undefined) {
    const serverOnly = [model, cwd, apiKeyEnv, apiKeyFile, promptFile].some((v) => v !== undefined);
    if (serverOnly || positional.length > 0) {
      throw new CliUsageError(
        "the offline demo plays a fixed script in a fresh temporary folder; --model, --cwd, " +
          "--api-key-env, --api-key-file, --prompt-file and a task need --base-url (a real server).",
      );
    }
    return common;
  }
  const shownUrl = JSON.stringify(redactUrl(baseUrl));
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new CliUsageError(`--base-url ${shownUrl} is not a URL. Give one like http://127.0.0.1:8080/v1.`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliUsageError(`--base-url must be http:// or https://, got ${shownUrl}.`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new CliUsageError(
      `--base-url ${shownUrl} carries a user name or password; leave them out of the URL and give the ` +
        `key with $OPENAI_API_KEY, --api-key-env NAME or --api-key-file PATH.`,
    );
  }
  if (model === undefined || model === "") {
    throw new CliUsageError("--base-url needs --model NAME (the model id the server knows).");
  }
  if (cwd === undefined) {
    throw new CliUsageError("--base-url needs --cwd DIR: name the folder the agent may work in.");
  }
  if (cwd.trim() === "") {
    throw new CliUsageError('--cwd "" names no folder; give one (write --cwd . for the current folder).');
  }
  const from = env.INIT_CWD ?? process.cwd();
  const workspace = path.resolve(from, cwd);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) {
    throw new CliUsageError(`the workspace ${workspace} does not exist or is not a folder (--cwd).`);
  }
  if (promptFile !== undefined && positional.length > 0) {
    throw new CliUsageError("give the task either as arguments or with --prompt-file, not both.");
  }
  if (promptFile !== undefined && promptFile === apiKeyFile) {
    throw new CliUsageError("--prompt-file and --api-key-file cannot both read the same file or stdin.");
  }
  const task = (promptFile === undefined ? positional.join(" ") : readText("--prompt-file", promptFile, from)).trim();
  if (task === "") {
    throw new CliUsageError(
      promptFile === undefined
        ? 'give the task as an argument, e.g. "list the files and summarise them", or with --prompt-file PATH.'
        : `the task file ${promptFile} is empty (--prompt-file).`,
    );
  }
  if (apiKeyFile !== undefined && (noApiKey || apiKeyEnv !== undefined)) {
    throw new CliUsageError("--api-key-file cannot be combined with --api-key-env or --no-api-key: choose one.");
  }
  let apiKey: string | undefined;
  if (apiKeyFile !== undefined) {
    apiKey = readText("--api-key-file", apiKeyFile, from).split(/\r?\n/)[0]!.trim();
    if (apiKey === "") throw new CliUsageError(`no API key: the first line of ${apiKeyFile} is empty (--api-key-file).`);
  } else if (!noApiKey) {
    const name = apiKeyEnv ?? "OPENAI_API_KEY";
    apiKey = env[name];
    if (apiKey === undefined || apiKey === "") {
      throw new CliUsageError(
        `no API key: $${name} is not set. Set it, name another variable with --api-key-env NAME, ` +
          `or pass --no-api-key for a local server that needs none.`,
      );
    }
  }
  return {
    ...common,
    server: {
      baseUrl: baseUrl.replace(/\/+$/, ""),
      model,
      ...(apiKey !== undefined && { apiKey }),
      ...(apiKeyEnv !== undefined && { apiKeyEnv }),
      workspace,
      task,
    },
  };
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
