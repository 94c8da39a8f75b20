/**
 * The main job, `npm start`: one complete agent run with the coding tools, and its live trace.
 *
 * Offline by default: a scripted model fixes a bug in a fresh temporary workspace. With
 * `--base-url` and `--model` the same agent runs against an OpenAI-compatible server, in the
 * folder named by `--cwd`, on the task given as an argument. `--help` says it all.
 */
import { Agent } from "../agent.js";
import { commandEnvironment, createCodingTools } from "../coding-tools/index.js";
import { textOf } from "../messages.js";
import { createOpenAICompatibleModel } from "../openai-compatible.js";
import type { AgentMessage, AssistantMessage, Message, Model } from "../types.js";
import { CliUsageError, HELP, parseArgs, usageMessage } from "./args.js";
import { DEMO_TASK, createDemoModel, createDemoWorkspace } from "./demo.js";
import { withPairingCheck } from "./pairing.js";
import { TracePrinter, neutralize } from "./trace.js";

/** Where the main job writes; tests pass their own. */
export interface CliIO {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

const SYSTEM_PROMPT = (workspace: string) =>
  `You are a careful coding agent working in the folder ${workspace}. ` +
  `Use the tools (read, write, edit, ls, bash) to inspect and change files there; paths are ` +
  `relative to that folder. Read before you edit, check your work by running it, and finish ` +
  `with a short answer that says what you did.`;

/**
 * Runs the main job; resolves with the exit code (0 ok, 1 the run failed, 2 usage, 130 the
 * run was interrupted: `signal` aborted it, and its `reason`, if a string, names why).
 */
export async function runMain(argv: readonly string[], io: CliIO, signal?: AbortSignal): Promise<number> {
  let options;
  try {
    options = parseArgs(argv, io.env, io.stdout.isTTY === true);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    io.stderr.write(usageMessage(error));
    return 2;
  }
  if (options.kind === "help") {
    io.stdout.write(HELP);
    return 0;
  }
  const info = (text: string) => (options.json ? io.stderr : io.stdout).write(`${text}\n`);

  let model: Model;
  let workspace: string;
  let task: string;
  // Commands the model runs never see the API key: secret-looking variables are dropped.
  let commandEnv = commandEnvironment(process.env);
  if (options.server === undefined) {
    workspace = await createDemoWorkspace();
    // On a terminal, slow the deltas down a little so they can be watched arriving.
    model = createDemoModel({ delayMs: io.stdout.isTTY === true && !options.json ? 12 : 0 });
    task = DEMO_TASK;
    info(`pi-course · offline demo on the scripted model (no network)`);
  } else {
    const server = options.server;
    workspace = server.workspace;
    model = createOpenAICompatibleModel({
      baseUrl: server.baseUrl,
      model: server.model,
      ...(server.apiKey !== undefined && { apiKey: server.apiKey }),
    });
    task = server.task;
    // Also the variable named by --api-key-env, and any other holding the key in use.
    commandEnv = commandEnvironment(process.env, server.apiKeyEnv === undefined ? [] : [server.apiKeyEnv]);
    for (const name of Object.keys(commandEnv)) {
      if (server.apiKey !== undefined && commandEnv[name] === server.apiKey) delete commandEnv[name];
    }
    info(`pi-course · ${server.model} at ${server.baseUrl}`);
  }
  info(`workspace: ${workspace}`);
  info(`task:      ${task}\n`);

  const printer = new TracePrinter({ write: (text) => io.stdout.write(text), color: options.color, json: options.json });
  const convertToLlm = (messages: AgentMessage[]): Message[] => {
    const canonical = messages.filter(
      (m): m is Message => "role" in m && (m.role === "user" || m.role === "assistant" || m.role === "toolResult"),
    );
    if (!options.dropToolResult) return canonical;
    // The break-it experiment: the model never sees the first tool result.
    const first = canonical.findIndex((m) => m.role === "toolResult");
    return first === -1 ? canonical : canonical.filter((_, i) => i !== first);
  };
  const agent = new Agent({
    initialState: {
      systemPrompt: SYSTEM_PROMPT(workspace),
      model: withPairingCheck(model),
      tools: createCodingTools(workspace, { bash: { env: commandEnv } }),
    },
    convertToLlm,
  });
  agent.subscribe((event) => printer.print(event));
  const running = agent.prompt(task);
  // the caller's signal stops the run (abort() before the prompt would find the agent idle)
  if (signal?.aborted) agent.abort();
  else signal?.addEventListener("abort", () => agent.abort(), { once: true });
  await running;
  printer.finish();
  const messages = agent.state.messages;
  const last = [...messages].reverse().find((m): m is AssistantMessage => "role" in m && m.role === "assistant");
  if (signal?.aborted) {
    // Whatever the last message is, the run did not finish: no answer, and not a success.
    const by = typeof signal.reason === "string" ? ` by ${signal.reason}` : "";
    io.stderr.write(`\ninterrupted: the run was stopped${by} before it finished; there is no answer.\n`);
    if (options.server === undefined) io.stderr.write(`The workspace is kept for you to look at: ${workspace}\n`);
    return 130;
  }
  if (last === undefined || last.stopReason === "error" || last.stopReason === "aborted") {
    const why = neutralize(last?.errorMessage ?? "the run ended without an answer");
    io.stderr.write(`\nerror: ${why}\n${hint(why, options.server?.baseUrl)}`);
    return 1;
  }
  if (!options.json) {
    info(`\nanswer:\n${neutralize(textOf(last))}\n`);
    if (options.server === undefined) info(`The workspace is kept for you to look at: ${workspace}`);
  }
  return 0;
}

/** A next step for the errors people meet first. */
function hint(message: string, baseUrl: string | undefined): string {
  if (/ECONNREFUSED/.test(message)) {
    return `hint: nothing answered at ${baseUrl}: is the server running, and is the port right?\n`;
  }
  if (/ENOTFOUND|EAI_AGAIN/.test(message)) return `hint: the host name of ${baseUrl} could not be resolved.\n`;
  if (/\b401\b|\b403\b/.test(message)) return "hint: the server refused the API key; check it (see --api-key-env).\n";
  if (/\b404\b/.test(message)) return "hint: check --base-url (usually it ends in /v1) and --model.\n";
  if (/pairing check/.test(message)) return "hint: this is chapter 00's break-it experiment; run without --drop-tool-result.\n";
  return "";
}
