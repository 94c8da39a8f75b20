/**
 * The slash commands of the conversation (interactive.ts), as one table: each command's name,
 * its line of `/help`, whether it needs a session, and what it does. A feature of a later chapter
 * adds its own commands from its module under `features/`.
 *
 * Contract: a command that `needsSession` is run only with a session in use (`chat.runtime.session`
 * is set); without one the conversation says `/NAME needs a session (WHY)` and runs nothing.
 */
import { compact } from "../session/compaction.js";
import type { Resources } from "../resources/resources.js";
import { parseSlashCommand } from "../resources/prompt-templates.js";
import type { AgentMessage } from "../types.js";
import type { ChatPrinter } from "./render.js";
import { resourceHelp } from "./project-resources.js";
import type { Runtime } from "./runtime.js";
import { forkSession, labelSession, treeLines } from "./session-tree.js";
import type { SessionFile } from "../session/session.js";
import { neutralize, untrustedText } from "./terminal-text.js";

/** What a command may use of the conversation it runs in. */
export interface Chat {
  readonly runtime: Runtime;
  readonly printer: ChatPrinter;
  /** The terminal's width, if known. */
  columns(): number | undefined;
  /** Runs `text` as a prompt; undefined: goes on with the run the transcript ends in (`continue()`). */
  startRun(text: string | undefined): void;
  /** Leaves the conversation with `code`. */
  leave(code: number): void;
  /** The person has left (the conversation is ending). */
  readonly left: boolean;
  /** The commands of this conversation (`commandTable`). */
  readonly commands: readonly SlashCommand[];
  /** Tells every feature that a session was opened (`CliFeature.opened`: a durable run asks about a killed run). */
  sessionOpened(): Promise<void>;
  /**
   * Asks `question` on the prompt line and resolves with the answer; undefined when the person
   * left instead (Ctrl-D, or Ctrl-C, which first says `leaving`).
   */
  ask(question: string, leaving: string): Promise<string | undefined>;
}

/** One slash command. */
export interface SlashCommand {
  name: string;
  /** Other names it answers to (`/quit`). */
  aliases?: readonly string[];
  /** Its line of `/help`: usage, then what it does. */
  help: string;
  /** Set: it needs a session, and this says why (`/NAME needs a session (WHY)`). */
  needsSession?: string;
  /** Runs it; `arg` is the rest of the line, trimmed. */
  run(chat: Chat, arg: string, session: SessionFile): Promise<void> | void;
}

const NOT_KEPT = "this conversation is not kept: --no-session";

/** The core commands of a conversation (not a feature's), in the order `/help` lists them. */
export const CORE_COMMANDS: readonly SlashCommand[] = [
  {
    name: "help",
    help: "/help             this list",
    run: ({ printer, runtime, commands }) => {
      for (const text of [...commands.map((c) => neutralize(c.help)), ...HELP_TAIL]) printer.line(text, "dim");
      for (const text of resourceHelp(runtime.resources)) printer.line(text, "dim");
    },
  },
  {
    name: "new",
    help: "/new              start a new session (the current one stays on disk)",
    run: async ({ printer, runtime }) => {
      await runtime.startNew();
      printer.line(
        runtime.session
          ? `new session ${neutralize(runtime.session.header.id)}`
          : "new conversation (not kept: --no-session)",
        "dim",
      );
    },
  },
  { name: "sessions", help: "/sessions         the sessions of this folder, newest first", run: listSessions },
  { name: "resume", help: "/resume ID        go on with session ID (its first characters are enough)", run: resume },
  {
    name: "compact",
    help: "/compact          condense older messages into a summary, to free context",
    needsSession: "it writes a compaction entry",
    run: compactSession,
  },
  {
    name: "tree",
    help: "/tree             the session's tree: every message of every branch, where you are marked",
    needsSession: NOT_KEPT,
    run: (chat, _arg, session) => {
      for (const text of treeLines(session, chat.columns() ?? 80)) chat.printer.line(text);
    },
  },
  {
    name: "fork",
    help: "/fork N [LABEL]   go on from message N of /tree (or an entry id) on a new branch; LABEL names it",
    needsSession: NOT_KEPT,
    run: async ({ printer, runtime }, arg, session) => {
      if (arg === "") return printer.line("/fork N [LABEL]: go on from message N of /tree (or an entry id)", "red");
      const [ref = "", ...label] = arg.split(/\s+/);
      const node = await forkSession(session, ref, label.join(" "));
      runtime.reload();
      const messages = runtime.agent.state.messages;
      printer.line(
        `forked: going on after message ${node.number}; your next message starts a new branch (${messages.length} messages in context):`,
        "dim",
      );
      replay(printer, messages);
    },
  },
  {
    name: "label",
    help: "/label TEXT       name the current message (shown in /tree and the page)",
    needsSession: NOT_KEPT,
    run: async ({ printer, runtime }, arg, session) => {
      const node = await labelSession(session, arg);
      runtime.reload();
      printer.line(`labelled message ${node.number}: ${neutralize(arg)}`, "dim");
    },
  },
  {
    name: "export",
    help: "/export [FILE]    write the session as one HTML page (default: beside its file)",
    needsSession: NOT_KEPT,
    run: async ({ printer }, arg, session) => {
      const page = { header: session.header, entries: session.entries() };
      // the page's modules load when a page is written (the `export` command loads them the same way)
      const { writeSessionPage } = await import("./export.js");
      const result = await writeSessionPage(page, session.path, arg === "" ? undefined : arg);
      printer.line(
        `wrote ${neutralize(result.out)} (${result.messages} messages, ${result.branches} branch${result.branches === 1 ? "" : "es"})`,
        "dim",
      );
    },
  },
  {
    name: "model",
    help: "/model [NAME]     show the model, or switch (a catalogue name, a virtual model, or a,b to fall back; Tab completes)",
    run: async ({ printer, runtime }, arg) => {
      if (arg !== "") {
        if (runtime.options.server === undefined)
          return printer.line("the offline demo has one model; start with --base-url for others", "red");
        await runtime.switchModel(arg);
      }
      printer.line(modelLine(runtime), "dim");
    },
  },
  {
    name: "later",
    help: "/later TEXT       queue TEXT for when the agent would stop (Alt-Enter does the same)",
    run: ({ printer, runtime }, arg) => {
      if (arg === "") return printer.line("/later TEXT: what to say when the agent would stop", "red");
      runtime.agent.followUp(arg);
      printer.line(`↳ queued for later: ${neutralize(arg)}`, "dim");
    },
  },
  { name: "skills", help: "/skills           the skills found; /skill:NAME [ARGS] activates one", run: listSkills },
];

/** The last command of `/help`, after every feature's. */
const EXIT_COMMAND: SlashCommand = {
  name: "exit",
  aliases: ["quit"],
  help: "/exit             leave (Ctrl-D too)",
  run: (chat) => chat.leave(0),
};

/** What `/help` says after the commands. */
const HELP_TAIL = [
  "While the agent works, Enter steers it: your text lands after the current tool batch.",
  "Ctrl-C stops the run; a second Ctrl-C exits.",
];

/**
 * The commands of a conversation: the core ones, then `extra` (the features'; one with the name of
 * a core command replaces it in place), then `/exit`.
 */
export function commandTable(extra: readonly SlashCommand[]): SlashCommand[] {
  const table = [...CORE_COMMANDS];
  for (const command of extra) {
    const at = table.findIndex((c) => c.name === command.name);
    if (at === -1) table.push(command);
    else table[at] = command;
  }
  return [...table, EXIT_COMMAND];
}

/**
 * The commands extensions registered (`ExtensionAPI.registerCommand`), as rows of the table: their
 * names never clash with the table's (`commandNames` is what registration refuses). A string a
 * command returns is shown; `say` shows a line at once.
 */
export function extensionCommands(resources: Resources | undefined): SlashCommand[] {
  if (resources === undefined) return [];
  return [...resources.extensions.commands].map(([name, command]) => ({
    name,
    help: `${`/${name}`.padEnd(17)} ${command.description} (extension)`,
    run: async ({ printer }, arg) => {
      const said = await command.run(arg, {
        cwd: resources.locations.cwd,
        say: (text) => printer.line(neutralize(String(text))),
      });
      if (typeof said === "string" && said !== "") printer.line(neutralize(said));
    },
  }));
}

/** Every name the commands of `table` answer to: a template or an extension's command may not take one. */
export function commandNames(table: readonly SlashCommand[]): string[] {
  return table.flatMap((command) => [command.name, ...(command.aliases ?? [])]);
}

/**
 * Runs the slash command `line` (`/NAME ARGS`) from the table; an unknown name, or a command that
 * needs a session when none is in use, is said in red.
 */
export async function runCommand(chat: Chat, line: string): Promise<void> {
  const { name, args: arg } = parseSlashCommand(line) ?? { name: "", args: "" };
  const command = chat.commands.find((c) => c.name === name || c.aliases?.includes(name) === true);
  if (command === undefined) return chat.printer.line(`unknown command /${neutralize(name)}; /help lists them`, "red");
  const session = chat.runtime.session;
  if (command.needsSession !== undefined && session === undefined) {
    return chat.printer.line(`/${command.name} needs a session (${command.needsSession})`, "red");
  }
  await command.run(chat, arg, session!);
}

async function listSessions({ printer, runtime }: Chat): Promise<void> {
  if (runtime.folder === undefined) return printer.line("no sessions are kept (--no-session)", "dim");
  const all = await runtime.folder.list();
  if (all.length === 0) return printer.line(`no sessions yet in ${neutralize(runtime.folder.dir)}`, "dim");
  for (const s of all) {
    const current = s.id === runtime.session?.header.id ? " (this one)" : "";
    const what =
      s.problem !== undefined ? `unreadable: ${s.problem}` : `${s.messages} messages · ${s.title || "(empty)"}`;
    printer.line(
      `${neutralize(s.id.slice(0, 8))}  ${new Date(s.modified).toISOString().slice(0, 16).replace("T", " ")}  ${neutralize(what)}${current}`,
    );
  }
}

async function resume(chat: Chat, arg: string): Promise<void> {
  const { printer, runtime } = chat;
  if (runtime.folder === undefined) return printer.line("no sessions are kept (--no-session)", "red");
  if (arg === "") return printer.line("give the session's id: /resume ID (see /sessions)", "red");
  const found = await runtime.folder.find(arg);
  await runtime.resume(found, (note) => printer.line(`note: ${neutralize(note)}`, "yellow"));
  await chat.sessionOpened();
  if (chat.left) return;
  const messages = runtime.agent.state.messages;
  printer.line(`resumed session ${neutralize(found.id)} (${messages.length} messages):`, "dim");
  replay(printer, messages);
  if (runtime.unfinished) {
    // a feature recovered a killed run and the person said yes: it goes on now (the prompt line waits for it)
    runtime.unfinished = false;
    printer.line("going on with the interrupted run (Ctrl-C stops it)", "dim");
    chat.startRun(undefined);
  }
}

async function compactSession({ printer, runtime }: Chat, _arg: string, session: SessionFile): Promise<void> {
  printer.line("compacting…", "dim");
  const keepRecentTokens = 2_000;
  const budget = runtime.options.contextTokens;
  const { state } = runtime.agent;
  const result = await compact(session, {
    model: state.model,
    keepRecentTokens,
    systemPrompt: state.systemPrompt,
    // With a budget, a summary that could not fit beside the kept messages is refused.
    ...(budget !== undefined && { maxSummaryTokens: Math.max(1, budget - keepRecentTokens) }),
  });
  if (!result.ok) return printer.line(`nothing compacted: ${result.reason.message}`, "yellow");
  runtime.reload();
  printer.line(`summarised ${result.summarizedMessages} messages, kept ${result.keptMessages}`, "dim");
}

function listSkills({ printer, runtime }: Chat): void {
  const skills = runtime.resources?.skills ?? [];
  if (skills.length === 0) return printer.line("no skills found (see --help: Skills)", "dim");
  for (const s of skills) {
    const flags = [
      s.scope,
      s.disableModelInvocation ? "user only" : "",
      runtime.resources!.skillLibrary.isActive(s.name) ? "active" : "",
    ].filter((f) => f !== "");
    printer.line(`${untrustedText(s.name, { max: 200 })} (${flags.join(", ")}): ${untrustedText(s.description)}`);
  }
}

/** What `/model` shows: the model in use. */
function modelLine(runtime: Runtime): string {
  const model = runtime.agent.state.model;
  return `model: ${model.provider} · ${model.id}`;
}

/** Shows `messages` as the conversation showed them, then a rule. */
export function replay(printer: ChatPrinter, messages: readonly AgentMessage[]): void {
  for (const message of messages) printer.replay(message);
  printer.line("─".repeat(20), "dim");
}
