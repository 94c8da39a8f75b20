/**
 * The main job, `npm start`: one complete agent run with the coding tools, and its live trace.
 *
 * Offline by default: a scripted model fixes a bug in a fresh temporary workspace. With
 * `--base-url` and `--model` the same agent runs against an OpenAI-compatible server (or, with
 * `--provider anthropic`, Anthropic's Messages API), in the folder named by `--cwd`. On a
 * terminal without a task it is a conversation (interactive.ts); with a task, or piped, one run
 * shown as its trace, its answer (`--print`) or JSON events (`--json`). The parts are wired in
 * runtime.ts. `--help` says it all.
 */
import { homedir } from "node:os";
import { textOf } from "../messages.js";
import type { Writable } from "node:stream";
import { parseSlashCommand } from "../resources/prompt-templates.js";
import type { RegisteredFlag } from "../resources/extension-flags.js";
import { findProjectResources, loadResources, type Resources } from "../resources/resources.js";
import { homeFolder } from "./settings.js";
import { askTrust, expandInput, resourceBanner } from "./project-resources.js";
import { commandNames, commandTable } from "./chat-commands.js";
import type { AssistantMessage } from "../types.js";
import {
  type CliOptions,
  CliUsageError,
  commandName,
  helpText,
  parseArgs,
  readCommandLine,
  usageMessage,
  versionText,
  type RunOptions,
} from "./args.js";
import { DEMO_TASK } from "./demo.js";
import { COMMANDS } from "./commands.js";
import { runInteractive } from "./interactive.js";
import type { CliIO, TerminalIO } from "./io.js";
import type { OptionSpec } from "./features/feature.js";
import { FEATURES, OPTIONS } from "./options.js";
import { Runtime, type RuntimeWiring } from "./runtime.js";
import { TracePrinter, neutralize } from "./trace.js";

export type { CliIO } from "./io.js";

/**
 * Runs the main job; resolves with the exit code (0 ok, 1 the run failed, 2 usage, 130 the
 * run was interrupted: `signal` aborted it, and its `reason`, if a string, names why).
 */
export async function runMain(argv: readonly string[], io: CliIO, signal?: AbortSignal): Promise<number> {
  // `pi-course export SESSION_FILE`, `pi-course eval SUITE` (chapter 14): commands.ts.
  const command = COMMANDS.find((c) => c.name === argv[0]);
  if (command !== undefined) return command.run(argv.slice(1), io, signal);
  const terminal = { stdinIsTTY: io.stdin?.isTTY === true, stdoutIsTTY: io.stdout.isTTY === true };
  let parsed: CliOptions;
  try {
    parsed = readCommandLine(argv, io.env, terminal);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    io.stderr.write(usageMessage(error, io.env));
    return 2;
  }
  if (parsed.kind === "help") {
    io.stdout.write(helpText(commandName(io.env)));
    return 0;
  }
  if (parsed.kind === "version") {
    io.stdout.write(versionText());
    return 0;
  }
  const notes: string[] = [];
  const reread = (extra: readonly OptionSpec[]) => parseArgs(argv, io.env, terminal, { extra }) as RunOptions;
  const started = await startRuntime(parsed, io, notes, reread);
  if (typeof started === "number") return started;
  const { runtime, resources } = started;
  const options = runtime.options;
  const info = infoWriter(options, io);
  showBanner(runtime, resources, io, info, notes);
  try {
    if (options.mode === "interactive") {
      const stdin = io.stdin!;
      const output = io.stdout as unknown as TerminalIO["output"];
      return await runInteractive(
        runtime,
        { input: stdin, output, color: options.color },
        signal ?? new AbortController().signal,
        options.task,
      );
    }
    return await runOnce(runtime, options, io, info, signal);
  } finally {
    await runtime.close();
  }
}

/** In json and print modes stdout carries only the events or the answer: what is said goes to stderr. */
function infoWriter(options: RunOptions, io: CliIO): (text: string) => void {
  return (text) => (options.mode === "json" || options.mode === "print" ? io.stderr : io.stdout).write(`${text}\n`);
}

/**
 * Loads the project around the agent (after the trust decision) and starts the runtime; `notes`
 * hears what a person should know. `reread` reads argv again with the extensions' flags. The
 * exit code when it cannot start (the error is written: 2 for an option no extension added).
 */
async function startRuntime(
  parsed: RunOptions,
  io: CliIO,
  notes: string[],
  reread: (extra: readonly OptionSpec[]) => RunOptions,
): Promise<{ runtime: Runtime; resources: Resources } | number> {
  let options = parsed;
  try {
    // The project around the agent: the trust question (interactive only) comes before anything
    // of the project is loaded, and before the conversation's own prompt.
    const locations = { cwd: options.folder, piHome: homeFolder(io.env), userHome: io.env.HOME || homedir() };
    // Files of features that load only in a trusted folder.
    const alsoProtected = FEATURES.flatMap((feature) => feature.projectFiles?.(options) ?? []);
    const ask =
      options.mode === "interactive" && io.stdin !== undefined
        ? askTrust({ input: io.stdin, output: io.stdout as unknown as Writable }, [
            ...findProjectResources(locations),
            ...alsoProtected,
          ])
        : undefined;
    const resources = await loadResources({
      locations,
      alsoProtected,
      contextFiles: options.contextFiles,
      trust: { ...(options.approve !== undefined && { override: options.approve }), ...(ask !== undefined && { ask }) },
      extensionPaths: options.extensions,
      reservedTools: ["read", "write", "edit", "ls", "bash"],
      // Every command of the conversation, a feature's too (/tree, /mcp, /thinking…).
      reservedCommands: commandNames(commandTable(FEATURES.flatMap((feature) => feature.commands ?? []))),
      reservedFlags: OPTIONS.flatMap((spec) => (spec.name === undefined ? [] : [spec.name])),
      onDiagnostic: (w) => io.stderr.write(`warning: ${neutralize(`${w.path}: ${w.message}`)}\n`),
    });
    const flags = resources.extensions.flags.list();
    if (options.unknownOptions !== undefined || flags.length > 0) {
      options = reread(flags.map(flagOption));
      resources.extensions.flags.setValues(options.extensionFlags ?? new Map());
    }
    const decision = { trusted: resources.trust?.trusted === true, files: alsoProtected, env: io.env };
    for (const feature of FEATURES) options = { ...options, ...feature.afterTrust?.(options, decision) };
    // On a terminal, slow the demo's deltas down a little so they can be watched arriving.
    const slow = io.stdout.isTTY === true && (options.mode === "trace" || options.mode === "interactive") ? 12 : 0;
    // The interactive mode leaves questions to the conversation (a killed run: asked, not before the banner).
    const wiring: RuntimeWiring = { resources, features: FEATURES, asks: options.mode === "interactive" };
    const runtime = await Runtime.start(options, (note) => notes.push(note), slow, wiring);
    return { runtime, resources };
  } catch (error) {
    if (error instanceof CliUsageError) {
      io.stderr.write(usageMessage(error, io.env));
      return 2;
    }
    io.stderr.write(`error: ${neutralize((error as Error).message)}\n`);
    return 1;
  }
}

/** An extension's flag as a row of the option table. */
function flagOption(flag: RegisteredFlag): OptionSpec {
  return {
    name: flag.name,
    ...(flag.type === "string" && { value: "VALUE" }),
    section: "options",
    help: flag.description,
  };
}

/** What the run is about, before it starts: the model, the workspace, the session, the project. */
function showBanner(
  runtime: Runtime,
  resources: Resources,
  io: CliIO,
  info: (text: string) => void,
  notes: readonly string[],
): void {
  const options = runtime.options;
  const server = options.server;
  let shownModel = server?.model;
  for (const feature of FEATURES) shownModel = feature.modelLabel?.(runtime) ?? shownModel;
  if (server === undefined) info(`pi-course · offline demo on the scripted model (no network)`);
  else
    info(
      `pi-course · ${shownModel} at ${server.baseUrl ?? "https://api.anthropic.com"}${server.provider === "anthropic" ? " (Anthropic)" : ""}`,
    );
  info(`workspace: ${runtime.workspace}`);
  // The id comes from the file and the path from a folder listing: neither is trusted on a terminal.
  if (runtime.session !== undefined)
    info(`session:   ${neutralize(runtime.session.header.id)} (${neutralize(runtime.session.path)})`);
  // Names, paths and warnings come from the project's files: neutralised too.
  const banner = resourceBanner(resources);
  for (const line of banner.lines) info(neutralize(line));
  for (const warning of banner.warnings) io.stderr.write(`warning: ${neutralize(warning)}\n`);
  for (const note of [...resources.notes, ...notes]) io.stderr.write(`note: ${neutralize(note)}\n`);
  runtime.onNotice = (note) => io.stderr.write(`note: ${neutralize(note)}\n`);
}

/** The trace, print and json modes: one prompt, then the exit code. */
async function runOnce(
  runtime: Runtime,
  options: RunOptions,
  io: CliIO,
  info: (text: string) => void,
  signal: AbortSignal | undefined,
): Promise<number> {
  let task = options.task ?? DEMO_TASK;
  const expanded = expandInput(runtime.resources, task);
  if (expanded.kind === "error") {
    io.stderr.write(`error: ${neutralize(expanded.message)}\n`);
    return 2;
  }
  const command = parseSlashCommand(task)?.name;
  if (
    expanded.kind === "none" &&
    command !== undefined &&
    runtime.resources?.extensions.commands.has(command) === true
  ) {
    io.stderr.write(
      `error: /${neutralize(command)} is an extension's command: it runs in the interactive mode only.\n`,
    );
    return 2;
  }
  if (expanded.kind === "prompt") {
    info(`${expanded.note}`);
    task = expanded.text;
  }
  info(`task:      ${task}\n`);
  const agent = runtime.agent;
  if (options.mode !== "print") {
    const printer = new TracePrinter({
      write: (text) => io.stdout.write(text),
      color: options.color,
      json: options.json,
      agentEndFields: () => Object.assign({}, ...FEATURES.map((feature) => feature.agentEndFields?.(runtime))),
    });
    agent.subscribe((event) => printer.print(event));
    agent.subscribe((event) => (event.type === "agent_end" ? printer.finish() : undefined));
  }
  const before = agent.state.messages.length;
  // A run the resumed session left unfinished (killed mid-way, recovered by a feature) goes on first.
  const resumed = runtime.unfinished;
  runtime.unfinished = false;
  const running = (async () => {
    if (resumed) {
      await agent.continue();
      if (signal?.aborted) return;
    }
    await agent.prompt(task);
  })();
  // the caller's signal stops the run (abort() before the prompt would find the agent idle)
  if (signal?.aborted) agent.abort();
  else signal?.addEventListener("abort", () => agent.abort(), { once: true });
  let failure: string | undefined;
  await running.catch((error: Error) => (failure = error.message));
  const messages = agent.state.messages.slice(before);
  const last = [...messages].reverse().find((m): m is AssistantMessage => "role" in m && m.role === "assistant");
  if (signal?.aborted) {
    // Whatever the last message is, the run did not finish: no answer, and not a success.
    const by = typeof signal.reason === "string" ? ` by ${signal.reason}` : "";
    io.stderr.write(`\ninterrupted: the run was stopped${by} before it finished; there is no answer.\n`);
    if (options.server === undefined)
      io.stderr.write(`The workspace is kept for you to look at: ${runtime.workspace}\n`);
    return 130;
  }
  if (failure !== undefined || last === undefined || last.stopReason === "error" || last.stopReason === "aborted") {
    const why = neutralize(failure ?? last?.errorMessage ?? "the run ended without an answer");
    io.stderr.write(`\nerror: ${why}\n${hint(why, options.server?.baseUrl)}`);
    return 1;
  }
  for (const feature of FEATURES) for (const line of feature.afterOnce?.(runtime) ?? []) info(line);
  // Piped, the answer as it is; on a terminal, its control characters as text (see trace.ts).
  if (options.mode === "print")
    io.stdout.write(`${io.stdout.isTTY === true ? neutralize(textOf(last)) : textOf(last)}\n`);
  else if (!options.json) {
    info(`\nanswer:\n${neutralize(textOf(last))}\n`);
    if (options.server === undefined) info(`The workspace is kept for you to look at: ${runtime.workspace}`);
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
  if (/pairing check/.test(message))
    return "hint: this is chapter 00's break-it experiment; run without --drop-tool-result.\n";
  return "";
}
