/**
 * The interactive mode: a conversation on a terminal.
 *
 * A readline prompt (line editing, up-arrow history); a line starts a run, and the answer
 * streams in (render.ts). While a run is active the prompt stays open: Enter sends the line with
 * `steer()` (it lands after the current tool batch), Alt-Enter or `/later TEXT` with `followUp()`
 * (when the agent would stop). Ctrl-C stops the run (every started tool call still gets its
 * result, and no model is called after it); a second Ctrl-C in a row exits. Ctrl-D or `/exit`
 * leaves.
 *
 * readline puts the terminal in raw mode, so Ctrl-C arrives as a key here, not as SIGINT to the
 * process group: the launcher and the agent's commands never see it (the abort kills those).
 */
import readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import { compact } from "../session/compaction.js";
import { textOf } from "../messages.js";
import type { AgentMessage } from "../types.js";
import { DEMO_TASK } from "./demo.js";
import { expandInput, resourceHelp } from "./resources.js";
import { ChatPrinter } from "./render.js";
import type { Runtime } from "./runtime.js";
import { neutralize } from "./trace.js";
import { writeSessionPage } from "./export.js";
import { forkSession, labelSession, treeLines } from "./session-tree.js";
// #region ch18
import { THINKING_LEVELS, type ThinkingLevel } from "../model.js";
import { conversationCost, formatConversationCost } from "../model-choice/cost.js";
// #endregion
// #region ch19
import { recoveryFound } from "./runtime.js";
// #endregion

export interface TerminalIO {
  input: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  output: Writable & { columns?: number; isTTY?: boolean };
  color: boolean;
}

export const COMMANDS_HELP = [
  "/help             this list",
  "/new              start a new session (the current one stays on disk)",
  "/sessions         the sessions of this folder, newest first",
  "/resume ID        go on with session ID (its first characters are enough)",
  "/compact          condense older messages into a summary, to free context",
  "/tree             the session's tree: every message of every branch, where you are marked",
  "/fork N           go on from message N of /tree (or an entry id) on a new branch",
  "/label TEXT       name the current message (shown in /tree and the page)",
  "/export [FILE]    write the session as one HTML page (default: beside its file)",
  "/model [NAME]     show the model, or switch (a catalogue name, a virtual model, or a,b to fall back; Tab completes)",
  // #region ch18
  "/thinking [LEVEL] show or set the thinking level: off, minimal, low, medium, high",
  "/cost             what this conversation cost so far",
  // #endregion
  "/later TEXT       queue TEXT for when the agent would stop (Alt-Enter does the same)",
  "/skills           the skills found; /skill:NAME [ARGS] activates one",
  // #region ch17
  "/mcp              the MCP servers: starting, ready with N tools, or failed and why; their stderr",
  // #endregion
  "/exit             leave (Ctrl-D too)",
  "While the agent works, Enter steers it: your text lands after the current tool batch.",
  "Ctrl-C stops the run; a second Ctrl-C exits.",
];

// #region ch19
/** The question the interactive mode asks when the session it opens holds a killed run. */
export const RECOVERY_QUESTION =
  "resume the killed run now? [Y/n] (n: record it as it stands and wait for your message) ";
// #endregion

/** Runs the conversation until the person leaves; resolves with the exit code. */
export async function runInteractive(
  runtime: Runtime,
  io: TerminalIO,
  signal: AbortSignal,
  firstTask?: string,
): Promise<number> {
  const agent = runtime.agent;
  const printer = new ChatPrinter({
    write: (text) => void io.output.write(text),
    color: io.color,
    columns: () => io.output.columns,
    ticker: true,
  });
  agent.subscribe((event) => printer.print(event));
  // While a run streams, readline echoes nothing: a key typed then would land inside the answer.
  // The typed line is kept (rl.line), shown on the ticker line, and comes back on the prompt line
  // when the run ends; Enter sends it as a steer at once.
  let echo = true;
  const readlineOutput = new Proxy(io.output, {
    get(target, key) {
      if (key === "write") {
        return (...args: Parameters<Writable["write"]>) => (echo ? target.write(...args) : true);
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const rl = readline.createInterface({
    input: io.input,
    output: readlineOutput,
    terminal: true,
    historySize: 500,
    // #region ch18
    completer: (line: string) => completeLine(runtime, line),
    // #endregion
  });
  // #region ch18
  runtime.onNotice = (text) => printer.line(`note: ${neutralize(text)}`, "yellow");
  // #endregion
  const promptText = io.color ? "\u001b[36m›\u001b[0m " : "› ";
  rl.setPrompt(promptText);
  // Earlier prompts of a resumed session come back with the up arrow (neutralised: readline
  // writes a history line to the terminal as it is).
  const history = (rl as unknown as { history: string[] }).history;
  for (const message of agent.state.messages) {
    if ("role" in message && message.role === "user") history.unshift(neutralize(textOf(message).split("\n")[0]!));
  }

  let running: Promise<void> | undefined;
  let lastKeyWasCtrlC = false;
  let exitCode: number | undefined;
  let done!: (code: number) => void;
  const finished = new Promise<number>((resolve) => (done = resolve));

  const leave = (code: number) => {
    if (exitCode !== undefined) return;
    exitCode = code;
    agent.abort();
    void (running ?? Promise.resolve()).then(async () => {
      printer.stopTicker();
      rl.close();
      done(code);
    });
  };

  const prompt = () => {
    if (exitCode === undefined && running === undefined) rl.prompt();
  };

  /** Runs `text` as a prompt (undefined: `continue()`, chapter 19), then `then` or the prompt line. */
  const startRun = (text: string | undefined, then?: () => void) => {
    echo = false;
    running = (text === undefined ? agent.continue() : agent.prompt(text))
      .catch((error: Error) => printer.line(`error: ${neutralize(error.message)}`, "red"))
      .finally(() => {
        running = undefined;
        echo = true;
        printer.showTyping("");
        printer.stopTicker();
        printer.endLine();
        // #region ch18
        if (runtime.options.server !== undefined) printer.line(`cost: ${costLine(runtime)}`, "dim");
        // #endregion
        if (then !== undefined && !signal.aborted) then();
        else prompt();
      });
  };

  // #region ch19
  /** While the recovery question waits for its answer (Ctrl-C then leaves, recovering nothing). */
  let asking = false;
  /**
   * A killed run found in the session just opened (`runtime.pendingRecovery`): says what it left,
   * asks whether to resume it, and recovers. Yes (Enter, y): recovered as the other modes do, and
   * `runtime.unfinished` says the run is to go on; no (n): recorded as it stands (interrupted calls
   * get their error results, nothing runs again), the prompt waits.
   */
  const settleRecovery = async (): Promise<void> => {
    const plan = runtime.pendingRecovery;
    if (plan === undefined) return;
    printer.line(`note: ${neutralize(recoveryFound(plan))}`, "yellow");
    let run: boolean | undefined;
    while (run === undefined) {
      asking = true;
      // Ctrl-D (the terminal closes) or Ctrl-C (see SIGINT) leaves without an answer
      const answer = await new Promise<string>((resolve) => {
        rl.once("close", () => resolve(""));
        rl.question(RECOVERY_QUESTION, resolve);
      });
      asking = false;
      if (exitCode !== undefined) return;
      if (/^(y|yes)?$/i.test(answer.trim())) run = true;
      else if (/^(n|no)$/i.test(answer.trim())) run = false;
      else printer.line("answer y (resume the run) or n (record it as it stands)", "dim");
    }
    await runtime.settleRecovery(run, (note) => printer.line(`note: ${neutralize(note)}`, "yellow"));
  };
  // #endregion

  const command = async (line: string): Promise<void> => {
    const [name = "", ...rest] = line.slice(1).split(/\s+/);
    const arg = rest.join(" ").trim();
    // templates, /skill:NAME and extension commands
    const expanded = expandInput(runtime.resources, line);
    switch (expanded.kind) {
      case "prompt":
        printer.line(`↳ ${expanded.note}`, "dim");
        return startRun(expanded.text);
      case "error":
        return printer.line(neutralize(expanded.message), "red");
      case "command": {
        const ext = runtime.resources!.extensions.commands.get(expanded.name)!;
        const said = await ext.run(expanded.args, {
          cwd: runtime.resources!.locations.cwd,
          say: (text) => printer.line(neutralize(String(text))),
        });
        if (typeof said === "string" && said !== "") printer.line(neutralize(said));
        return;
      }
    }
    switch (name) {
      case "help":
        for (const text of COMMANDS_HELP) printer.line(text, "dim");
        for (const text of resourceHelp(runtime.resources)) printer.line(text, "dim");
        return;
      case "skills": {
        const skills = runtime.resources?.skills ?? [];
        if (skills.length === 0) return printer.line("no skills found (see --help: Skills)", "dim");
        for (const s of skills) {
          const flags = [
            s.scope,
            s.disableModelInvocation ? "user only" : "",
            runtime.resources!.skillLibrary.isActive(s.name) ? "active" : "",
          ].filter((f) => f !== "");
          printer.line(`${neutralize(s.name)} (${flags.join(", ")}): ${neutralize(s.description)}`);
        }
        return;
      }
      case "exit":
      case "quit":
        return leave(0);
      case "new":
        await runtime.startNew();
        return printer.line(
          runtime.session
            ? `new session ${neutralize(runtime.session.header.id)}`
            : "new conversation (not kept: --no-session)",
          "dim",
        );
      case "sessions": {
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
        return;
      }
      case "resume": {
        if (runtime.folder === undefined) return printer.line("no sessions are kept (--no-session)", "red");
        if (arg === "") return printer.line("give the session's id: /resume ID (see /sessions)", "red");
        const found = await runtime.folder.find(arg);
        await runtime.resume(found, (note) => printer.line(`note: ${neutralize(note)}`, "yellow"));
        // #region ch19
        await settleRecovery();
        if (exitCode !== undefined) return;
        // #endregion
        printer.line(`resumed session ${neutralize(found.id)} (${agent.state.messages.length} messages):`, "dim");
        replay(printer, agent.state.messages);
        // #region ch19
        if (runtime.unfinished) {
          // the person answered yes: the killed run goes on now (the prompt line waits for it)
          runtime.unfinished = false;
          printer.line("going on with the interrupted run (Ctrl-C stops it)", "dim");
          startRun(undefined);
        }
        // #endregion
        return;
      }
      case "compact": {
        const session = runtime.session;
        if (session === undefined)
          return printer.line("/compact needs a session (it writes a compaction entry)", "red");
        printer.line("compacting…", "dim");
        const keepRecentTokens = 2_000;
        const budget = runtime.options.contextTokens;
        const result = await compact(session, {
          model: agent.state.model,
          keepRecentTokens,
          systemPrompt: agent.state.systemPrompt,
          // With a budget, a summary that could not fit beside the kept messages is refused.
          ...(budget !== undefined && { maxSummaryTokens: Math.max(1, budget - keepRecentTokens) }),
        });
        if (!result.ok) return printer.line(`nothing compacted: ${result.reason.message}`, "yellow");
        runtime.reload();
        return printer.line(`summarised ${result.summarizedMessages} messages, kept ${result.keptMessages}`, "dim");
      }
      case "tree": {
        const session = runtime.session;
        if (session === undefined)
          return printer.line("/tree needs a session (this conversation is not kept: --no-session)", "red");
        for (const text of treeLines(session, io.output.columns ?? 80)) printer.line(text);
        return;
      }
      case "fork": {
        const session = runtime.session;
        if (session === undefined)
          return printer.line("/fork needs a session (this conversation is not kept: --no-session)", "red");
        if (arg === "") return printer.line("/fork N: go on from message N of /tree (or an entry id)", "red");
        const node = await forkSession(session, arg);
        runtime.reload();
        printer.line(
          `forked: going on after message ${node.number}; your next message starts a new branch (${agent.state.messages.length} messages in context):`,
          "dim",
        );
        replay(printer, agent.state.messages);
        return;
      }
      case "label": {
        const session = runtime.session;
        if (session === undefined)
          return printer.line("/label needs a session (this conversation is not kept: --no-session)", "red");
        const node = await labelSession(session, arg);
        runtime.reload();
        return printer.line(`labelled message ${node.number}: ${neutralize(arg)}`, "dim");
      }
      case "export": {
        const session = runtime.session;
        if (session === undefined)
          return printer.line("/export needs a session (this conversation is not kept: --no-session)", "red");
        const result = await writeSessionPage(
          { header: session.header, entries: session.entries() },
          session.path,
          arg === "" ? undefined : arg,
        );
        return printer.line(
          `wrote ${neutralize(result.out)} (${result.messages} messages, ${result.branches} branch${result.branches === 1 ? "" : "es"})`,
          "dim",
        );
      }
      case "model":
        if (arg !== "") {
          if (runtime.options.server === undefined)
            return printer.line("the offline demo has one model; start with --base-url for others", "red");
          await runtime.switchModel(arg);
        }
        return printer.line(modelLine(runtime), "dim");
      // #region ch18
      case "thinking":
        if (arg !== "") {
          if (!(THINKING_LEVELS as readonly string[]).includes(arg))
            return printer.line(`/thinking LEVEL: one of ${THINKING_LEVELS.join(", ")}`, "red");
          await runtime.setThinking(arg as ThinkingLevel);
        }
        return printer.line(choiceLine(runtime), "dim");
      case "cost":
        return printer.line(`cost: ${costLine(runtime)}`, "dim");
      // #endregion
      // #region ch17
      case "mcp":
        if (runtime.mcp === undefined)
          return printer.line("no MCP servers are configured (see --mcp-config and ~/.pi-course/mcp.json)", "dim");
        for (const text of runtime.mcp.describe().split("\n")) printer.line(neutralize(text));
        return;
      // #endregion
      case "later":
        if (arg === "") return printer.line("/later TEXT: what to say when the agent would stop", "red");
        agent.followUp(arg);
        return printer.line(`↳ queued for later: ${neutralize(arg)}`, "dim");
      default:
        return printer.line(`unknown command /${neutralize(name)}; /help lists them`, "red");
    }
  };

  rl.on("line", (input) => {
    lastKeyWasCtrlC = false;
    const line = input.trim();
    if (running !== undefined) {
      if (line === "") return;
      if (line.startsWith("/later ")) {
        agent.followUp(line.slice(7).trim());
        return printer.line(`↳ queued for later: ${neutralize(line.slice(7).trim())}`, "dim");
      }
      if (line === "/exit") return leave(0);
      if (/^\/[a-z][\w:.-]*$/i.test(line.split(/\s/)[0]!)) {
        return printer.line(
          `${neutralize(line.split(/\s/)[0]!)} waits until the run has ended (Ctrl-C stops it); /later TEXT queues a message`,
          "yellow",
        );
      }
      agent.steer(line);
      return printer.line(`↳ steering: ${neutralize(line)} (after the current tool batch)`, "dim");
    }
    if (line === "") return prompt();
    if (line.startsWith("/")) {
      rl.pause();
      void command(line)
        .catch((error: Error) => printer.line(`error: ${neutralize(error.message)}`, "red"))
        .finally(() => {
          rl.resume();
          prompt();
        });
      return;
    }
    startRun(line);
  });

  // Alt-Enter: the line is a follow-up (or, when idle, an ordinary prompt).
  io.input.on("keypress", (_text: string, key?: { name?: string; meta?: boolean; ctrl?: boolean }) => {
    // Only two Ctrl-C in a row exit.
    if (!(key?.ctrl === true && key.name === "c")) lastKeyWasCtrlC = false;
    // readline has handled the key already (its listener came first): show the line as it is now.
    if (running !== undefined) printer.showTyping(neutralize(rl.line));
    if (key?.name !== "return" || key.meta !== true) return;
    // #region ch19
    if (asking) return; // the recovery question takes a plain answer
    // #endregion
    const line = rl.line.trim();
    (rl as unknown as { line: string; cursor: number }).line = "";
    (rl as unknown as { cursor: number }).cursor = 0;
    if (line === "") return;
    if (running === undefined) {
      io.output.write("\n");
      return startRun(line);
    }
    agent.followUp(line);
    printer.line(`↳ queued for later: ${neutralize(line)}`, "dim");
  });

  rl.on("SIGINT", () => {
    // #region ch19
    if (asking) {
      printer.line("(exit: the killed run is left as it is; --continue asks again)", "dim");
      return leave(130);
    }
    // #endregion
    if (lastKeyWasCtrlC) {
      printer.line("(exit)", "dim");
      return leave(130);
    }
    lastKeyWasCtrlC = true;
    if (running !== undefined) {
      agent.abort();
      return printer.line("stopping… (Ctrl-C again to exit)", "yellow");
    }
    (rl as unknown as { line: string; cursor: number }).line = "";
    (rl as unknown as { cursor: number }).cursor = 0;
    printer.line("(Ctrl-C again to exit, or /exit)", "dim");
    prompt();
  });
  rl.on("close", () => leave(exitCode ?? 0));
  signal.addEventListener("abort", () => leave(130), { once: true });

  // #region ch19
  // The resumed session's run was killed mid-way: the person is told what it left and asked first.
  await settleRecovery();
  if (exitCode !== undefined) return finished;
  // #endregion
  if (agent.state.messages.length > 0) {
    printer.line(`earlier in this session (${agent.state.messages.length} messages):`, "dim");
    replay(printer, agent.state.messages);
  }
  printer.line("Type a message and press Enter (/help for commands, Ctrl-D to leave).", "dim");
  const begin = () => {
    if (firstTask !== undefined) {
      io.output.write(`${promptText}${neutralize(firstTask)}\n`);
      startRun(firstTask);
    } else {
      prompt();
      // Offline, the demo task is the first suggestion: Enter sends it, Ctrl-U clears it.
      if (runtime.options.server === undefined && agent.state.messages.length === 0) rl.write(DEMO_TASK);
    }
  };
  // #region ch19
  // Recovered, and the person said yes: the killed run goes on first, before the prompt line.
  if (runtime.unfinished) {
    runtime.unfinished = false;
    printer.line("going on with the interrupted run (Ctrl-C stops it)", "dim");
    startRun(undefined, begin);
    return finished;
  }
  // #endregion
  begin();
  return finished;
}

// #region ch18
/** The model in use, as `/model` and `/thinking` show it. */
function choiceLine(runtime: Runtime): string {
  const model = runtime.agent.state.model;
  const choice = runtime.choice;
  const budget =
    choice?.budget !== undefined && runtime.options.contextTokens === undefined
      ? ` · context budget ${choice.budget} tokens`
      : "";
  return `model: ${neutralize(model.provider)} · ${neutralize(choice?.name ?? model.id)} · thinking ${choice?.thinking ?? "off"}${budget}`;
}

/** The conversation's cost: every answer on the session's path (compacted ones too), else the transcript. */
function costLine(runtime: Runtime): string {
  const session = runtime.session;
  const leaf = session?.leaf;
  const messages =
    session === undefined || leaf === undefined
      ? runtime.agent.state.messages
      : session.pathToLeaf(leaf.id).flatMap((e) => (e.type === "message" ? [e.message] : []));
  return formatConversationCost(conversationCost(messages));
}

/** Tab completion: model names after `/model `, levels after `/thinking `. */
function completeLine(runtime: Runtime, line: string): [string[], string] {
  const match = /^\/(model|thinking) (\S*)$/.exec(line);
  if (match === null) return [[], line];
  const [, command, start = ""] = match;
  const names = command === "model" ? runtime.catalogue.names() : [...THINKING_LEVELS];
  const found = names.filter((n) => n.startsWith(start));
  return [found.length > 0 ? found : names, start];
}
// #endregion

/** What `/model` shows: the model in use. */
function modelLine(runtime: Runtime): string {
  // #region ch18
  if (runtime.choice !== undefined) return choiceLine(runtime);
  // #endregion
  const model = runtime.agent.state.model;
  return `model: ${model.provider} · ${model.id}`;
}

function replay(printer: ChatPrinter, messages: readonly AgentMessage[]): void {
  for (const message of messages) printer.replay(message);
  printer.line("─".repeat(20), "dim");
}
