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
import type { Writable } from "node:stream";
import { textOf } from "../messages.js";
import { type Chat, commandTable, extensionCommands, replay, runCommand, type SlashCommand } from "./chat-commands.js";
import { DEMO_TASK } from "./demo.js";
import type { Questioner, TerminalIO } from "./io.js";
import { FEATURES } from "./options.js";
import { expandInput } from "./project-resources.js";
import { ChatPrinter } from "./render.js";
import type { Runtime } from "./runtime.js";
import { neutralize } from "./trace.js";

export type { TerminalIO } from "./io.js";

/** Runs the conversation until the person leaves; resolves with the exit code. */
export async function runInteractive(
  runtime: Runtime,
  io: TerminalIO,
  signal: AbortSignal,
  firstTask?: string,
): Promise<number> {
  const conversation = new Conversation(runtime, io, signal);
  return conversation.run(firstTask);
}

/** A readline line as the code may reach into it (readline keeps these fields undocumented). */
type Line = readline.Interface & { line: string; cursor: number; history: string[] };

/** One conversation on a terminal: the readline prompt, the runs it starts, the commands it runs. */
class Conversation implements Chat {
  readonly printer: ChatPrinter;
  readonly commands: readonly SlashCommand[];
  private readonly rl: Line;
  private readonly promptText: string;
  /** While a run streams, readline echoes nothing (a key typed then would land inside the answer). */
  private echo = true;
  private running: Promise<void> | undefined;
  private lastKeyWasCtrlC = false;
  private exitCode: number | undefined;
  private done!: (code: number) => void;
  private readonly finished = new Promise<number>((resolve) => (this.done = resolve));
  /** While a question (`ask`) waits for its answer: what Ctrl-C says as it leaves. */
  private asking: string | undefined;
  /** The prompt line is on the screen, waiting for a line (no run, command or question). */
  private prompting = false;
  /** While a feature's question waits (`question`): cancels it (Ctrl-C). */
  private cancelQuestion: (() => void) | undefined;

  constructor(
    readonly runtime: Runtime,
    private readonly io: TerminalIO,
    private readonly signal: AbortSignal,
  ) {
    this.commands = commandTable([
      ...FEATURES.flatMap((f) => f.commands ?? []),
      ...extensionCommands(runtime.resources),
    ]);
    this.printer = new ChatPrinter({
      write: (text) => void io.output.write(text),
      color: io.color,
      columns: () => io.output.columns,
      ticker: true,
    });
    runtime.agent.subscribe((event) => this.printer.print(event));
    // The typed line is kept (rl.line), shown on the ticker line, and comes back on the prompt
    // line when the run ends; Enter sends it as a steer at once.
    const readlineOutput = new Proxy(io.output, {
      get: (target, key) => {
        if (key === "write") {
          return (...args: Parameters<Writable["write"]>) => (this.echo ? target.write(...args) : true);
        }
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const completers = FEATURES.flatMap((f) => (f.complete === undefined ? [] : [f.complete]));
    this.rl = readline.createInterface({
      input: io.input,
      output: readlineOutput,
      terminal: true,
      historySize: 500,
      completer: (line: string): [string[], string] => {
        for (const complete of completers) {
          const found = complete(runtime, line);
          if (found !== undefined) return found;
        }
        return [[], line];
      },
    }) as Line;
    this.promptText = io.color ? "\u001b[36m›\u001b[0m " : "› ";
    this.rl.setPrompt(this.promptText);
    // Earlier prompts of a resumed session come back with the up arrow (neutralised: readline
    // writes a history line to the terminal as it is).
    for (const message of runtime.agent.state.messages) {
      if ("role" in message && message.role === "user") {
        this.rl.history.unshift(neutralize(textOf(message).split("\n")[0]!));
      }
    }
  }

  get left(): boolean {
    return this.exitCode !== undefined;
  }

  columns(): number | undefined {
    return this.io.output.columns;
  }

  leave(code: number): void {
    if (this.exitCode !== undefined) return;
    this.exitCode = code;
    this.runtime.agent.abort();
    void (this.running ?? Promise.resolve()).then(async () => {
      this.printer.stopTicker();
      this.rl.close();
      this.done(code);
    });
  }

  private prompt(): void {
    if (this.exitCode !== undefined || this.running !== undefined) return;
    this.prompting = true;
    this.rl.prompt();
  }

  /**
   * A notice that comes on its own (an MCP server became ready, a model fell back): printed as a
   * line of its own; on the prompt line it goes above the prompt, which is drawn again with what
   * was typed.
   */
  private readonly notice = (text: string): void => this.above(`note: ${neutralize(text)}`, "yellow");

  /** A line of its own, above the prompt line when that is on the screen. */
  private above(text: string, style?: "yellow"): void {
    if (this.exitCode !== undefined) return;
    if (!this.prompting) return this.printer.line(text, style);
    this.io.output.write("\r\u001b[2K");
    this.printer.line(text, style);
    this.rl.prompt(true);
  }

  /**
   * A question a feature asks while a run goes on (an MCP server's form): the ticker stops, what
   * was typed waits, and the question takes the prompt line until answered; Ctrl-C cancels it
   * (undefined), not the run. Features ask one question at a time.
   */
  private async question(question: string, signal?: AbortSignal): Promise<string | undefined> {
    if (this.exitCode !== undefined || signal?.aborted) return undefined;
    this.printer.stopTicker();
    if (this.prompting) this.io.output.write("\r\u001b[2K");
    const { echo } = this;
    const typed = this.rl.line;
    this.echo = true;
    this.rl.line = "";
    this.rl.cursor = 0;
    const cancel = new AbortController();
    let closed: (() => void) | undefined;
    let withdrawn: (() => void) | undefined;
    try {
      return await new Promise<string | undefined>((resolve) => {
        closed = () => resolve(undefined);
        this.rl.once("close", closed);
        this.cancelQuestion = () => {
          cancel.abort();
          resolve(undefined);
        };
        // whoever asked no longer waits: the question leaves the prompt line
        withdrawn = () => {
          cancel.abort();
          this.io.output.write("\n");
          resolve(undefined);
        };
        signal?.addEventListener("abort", withdrawn, { once: true });
        this.rl.question(question, { signal: cancel.signal }, resolve);
      });
    } finally {
      this.rl.off("close", closed!);
      signal?.removeEventListener("abort", withdrawn!);
      this.cancelQuestion = undefined;
      this.echo = echo;
      this.rl.line = typed;
      this.rl.cursor = typed.length;
      if (this.prompting && this.exitCode === undefined) this.rl.prompt(true);
    }
  }

  /** The person, for features that ask while a run goes on (`Runtime.questioner`). */
  private readonly questioner: Questioner = {
    say: (text) => this.above(text),
    ask: (question, signal) => this.question(question, signal),
  };

  /** Runs `text` as a prompt (undefined: `continue()`, chapter 19), then `then` or the prompt line. */
  startRun(text: string | undefined, then?: () => void): void {
    const { agent } = this.runtime;
    this.echo = false;
    this.running = (text === undefined ? agent.continue() : agent.prompt(text))
      .catch((error: Error) => this.printer.line(`error: ${neutralize(error.message)}`, "red"))
      .finally(() => {
        this.running = undefined;
        this.echo = true;
        this.printer.showTyping("");
        this.printer.stopTicker();
        this.printer.endLine();
        for (const feature of FEATURES) feature.afterRun?.(this);
        if (then !== undefined && !this.signal.aborted) then();
        else this.prompt();
      });
  }

  async sessionOpened(): Promise<void> {
    for (const feature of FEATURES) {
      await feature.opened?.(this);
      if (this.exitCode !== undefined) return;
    }
  }

  async ask(question: string, leaving: string): Promise<string | undefined> {
    this.asking = leaving;
    // Ctrl-D (the terminal closes) or Ctrl-C (see onInterrupt) leaves without an answer
    const answer = await new Promise<string>((resolve) => {
      this.rl.once("close", () => resolve(""));
      this.rl.question(question, resolve);
    });
    this.asking = undefined;
    return this.exitCode === undefined ? answer : undefined;
  }

  /** A line starting with "/": a template or a skill, else a command of the table (an extension's too). */
  private async command(line: string): Promise<void> {
    const { runtime, printer } = this;
    const expanded = expandInput(runtime.resources, line);
    switch (expanded.kind) {
      case "prompt":
        printer.line(`↳ ${expanded.note}`, "dim");
        return this.startRun(expanded.text);
      case "error":
        return printer.line(neutralize(expanded.message), "red");
    }
    await runCommand(this, line);
  }

  /** Enter: while a run is active a steer (or `/later`, `/exit`), else a prompt or a command. */
  private readonly onLine = (input: string): void => {
    const { printer } = this;
    this.lastKeyWasCtrlC = false;
    this.prompting = false;
    const line = input.trim();
    if (this.running !== undefined) {
      if (line === "") return;
      if (line.startsWith("/later ")) {
        this.runtime.agent.followUp(line.slice(7).trim());
        return printer.line(`↳ queued for later: ${neutralize(line.slice(7).trim())}`, "dim");
      }
      if (line === "/exit") return this.leave(0);
      if (/^\/[a-z][\w:.-]*$/i.test(line.split(/\s/)[0]!)) {
        return printer.line(
          `${neutralize(line.split(/\s/)[0]!)} waits until the run has ended (Ctrl-C stops it); /later TEXT queues a message`,
          "yellow",
        );
      }
      this.runtime.agent.steer(line);
      return printer.line(`↳ steering: ${neutralize(line)} (after the current tool batch)`, "dim");
    }
    if (line === "") return this.prompt();
    if (line.startsWith("/")) {
      this.rl.pause();
      void this.command(line)
        .catch((error: Error) => printer.line(`error: ${neutralize(error.message)}`, "red"))
        .finally(() => {
          this.rl.resume();
          this.prompt();
        });
      return;
    }
    this.startRun(line);
  };

  /** Alt-Enter: the line is a follow-up (or, when idle, an ordinary prompt). */
  private readonly onKeypress = (_text: string, key?: { name?: string; meta?: boolean; ctrl?: boolean }): void => {
    // Only two Ctrl-C in a row exit.
    if (!(key?.ctrl === true && key.name === "c")) this.lastKeyWasCtrlC = false;
    // readline has handled the key already (its listener came first): show the line as it is now.
    if (this.cancelQuestion !== undefined) return; // a feature's question is on the prompt line
    if (this.running !== undefined) this.printer.showTyping(neutralize(this.rl.line));
    if (key?.name !== "return" || key.meta !== true) return;
    if (this.asking !== undefined) return; // a question takes a plain answer
    const line = this.rl.line.trim();
    this.rl.line = "";
    this.rl.cursor = 0;
    if (line === "") return;
    if (this.running === undefined) {
      this.io.output.write("\n");
      return this.startRun(line);
    }
    this.runtime.agent.followUp(line);
    this.printer.line(`↳ queued for later: ${neutralize(line)}`, "dim");
  };

  /** Ctrl-C: stops a run; a second in a row exits. */
  private readonly onInterrupt = (): void => {
    const { printer } = this;
    if (this.asking !== undefined) {
      printer.line(this.asking, "dim");
      return this.leave(130);
    }
    if (this.cancelQuestion !== undefined) {
      this.io.output.write("\n");
      printer.line("(cancelled)", "dim");
      return this.cancelQuestion();
    }
    if (this.lastKeyWasCtrlC) {
      printer.line("(exit)", "dim");
      return this.leave(130);
    }
    this.lastKeyWasCtrlC = true;
    if (this.running !== undefined) {
      this.runtime.agent.abort();
      return printer.line("stopping… (Ctrl-C again to exit)", "yellow");
    }
    this.rl.line = "";
    this.rl.cursor = 0;
    printer.line("(Ctrl-C again to exit, or /exit)", "dim");
    this.prompt();
  };

  /** Listens, tells what the session holds, and starts: the first task, or the prompt line. */
  async run(firstTask: string | undefined): Promise<number> {
    const { runtime, printer } = this;
    const { agent } = runtime;
    this.rl.on("line", this.onLine);
    this.io.input.on("keypress", this.onKeypress);
    this.rl.on("SIGINT", this.onInterrupt);
    this.rl.on("close", () => this.leave(this.exitCode ?? 0));
    this.signal.addEventListener("abort", () => this.leave(130), { once: true });
    runtime.onNotice = this.notice;
    runtime.questioner = this.questioner;
    // e.g. the resumed session's run was killed mid-way: the person is told what it left and asked first
    await this.sessionOpened();
    if (this.exitCode !== undefined) return this.finished;
    if (agent.state.messages.length > 0) {
      printer.line(`earlier in this session (${agent.state.messages.length} messages):`, "dim");
      replay(printer, agent.state.messages);
    }
    printer.line("Type a message and press Enter (/help for commands, Ctrl-D to leave).", "dim");
    const begin = () => {
      if (firstTask !== undefined) {
        this.io.output.write(`${this.promptText}${neutralize(firstTask)}\n`);
        this.startRun(firstTask);
      } else {
        this.prompt();
        // Offline, the demo task is the first suggestion: Enter sends it, Ctrl-U clears it.
        if (runtime.options.server === undefined && agent.state.messages.length === 0) this.rl.write(DEMO_TASK);
      }
    };
    // Recovered (a feature), and the person said yes: the killed run goes on first, before the prompt line.
    if (runtime.unfinished) {
      runtime.unfinished = false;
      printer.line("going on with the interrupted run (Ctrl-C stops it)", "dim");
      this.startRun(undefined, begin);
      return this.finished;
    }
    begin();
    return this.finished;
  }
}
