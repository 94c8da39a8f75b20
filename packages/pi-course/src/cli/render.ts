/**
 * How a conversation looks on a terminal: the answer streamed as it arrives and wrapped to the
 * terminal's width, each tool call on one line with the first lines of its result, an elapsed
 * time while the model or a tool works, errors in red. Colour only when asked (args.ts decides:
 * a terminal, and `NO_COLOR` unset).
 *
 * Everything that comes from the model or a command goes through `neutralize` (trace.ts): no
 * escape sequence of theirs reaches the terminal.
 */
import type { AgentEvent } from "../agent/types.js";
import type { AgentMessage, AgentToolResult } from "../types.js";
import { contentText, neutralize, preview } from "./trace.js";

const CODES = { dim: 2, bold: 1, red: 31, green: 32, yellow: 33, cyan: 36, magenta: 35 } as const;
export type Style = keyof typeof CODES;

export interface ChatOutput {
  write(text: string): void;
  color: boolean;
  /** The terminal's width now (it may change); wrapping is off when undefined or small. */
  columns(): number | undefined;
  /** Show an elapsed time while the model or a tool works (a terminal only). */
  ticker: boolean;
}

/** The lines of a tool result shown under its call. */
const RESULT_LINES = 3;

export class ChatPrinter {
  /** The column the cursor is at (for wrapping streamed text). */
  private column = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private tickerShown = false;
  private pendingWord = "";
  private pendingStyle: Style | undefined;
  private readonly toolStarted = new Map<string, number>();
  /** What the person is typing while a run streams (shown on the ticker line, never in the answer). */
  private typing = "";
  /** The ticker's text without the typed line (`… model 3.1 s`), while it runs. */
  private tickerText: (() => string) | undefined;

  constructor(private readonly out: ChatOutput) {}

  /**
   * Shows `text` (what is typed while a run streams) after the ticker, redrawn now when the
   * ticker line is on screen; the empty string hides it.
   */
  showTyping(text: string): void {
    this.typing = text;
    if (this.tickerShown && this.column === 0) this.drawTicker();
  }

  /** `text` in `style` when colour is on. */
  paint(style: Style, text: string): string {
    return this.out.color ? `\u001b[${CODES[style]}m${text}\u001b[0m` : text;
  }

  /** A whole line of our own (a note, a command's answer), after any streamed text; wrapped at spaces. */
  line(text: string, style?: Style): void {
    this.endLine();
    for (const part of wrapWords(text, this.width()))
      this.raw(`${style === undefined ? part : this.paint(style, part)}\n`);
  }

  print(event: AgentEvent): void {
    switch (event.type) {
      case "turn_start":
        return this.startTicker("model");
      case "message_update": {
        const update = event.event;
        if (update.type === "text_delta") return this.stream(update.delta);
        if (update.type === "thinking_delta") return this.stream(update.delta, "dim");
        return this.flushWord();
      }
      case "message_end":
        return this.messageEnd(event.message);
      case "tool_execution_start":
        this.toolStarted.set(event.toolCallId, Date.now());
        this.line(
          `${nestedMark(event)}${this.paint("yellow", "⚙")} ${neutralize(event.toolName)} ${preview(argsText(event.args), 90)}`,
        );
        return this.startTicker(event.toolName);
      case "tool_execution_end": {
        const ms = Date.now() - (this.toolStarted.get(event.toolCallId) ?? Date.now());
        this.toolStarted.delete(event.toolCallId);
        const mark = event.isError ? this.paint("red", "✗") : this.paint("green", "✓");
        this.line(`${nestedMark(event)}${mark} ${neutralize(event.toolName)} ${this.paint("dim", `(${seconds(ms)})`)}`);
        this.resultLines(resultText(event.result), event.isError);
        return this.toolStarted.size > 0 ? this.startTicker("tools") : this.stopTicker();
      }
      case "agent_end":
        this.stopTicker();
        return this.endLine();
    }
  }

  /** Ends a streamed line, if one is open. */
  endLine(): void {
    this.flushWord();
    this.clearTicker();
    if (this.column > 0) this.raw("\n");
  }

  /** Stops the elapsed-time ticker (at the end of a run). */
  stopTicker(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.tickerText = undefined;
    this.clearTicker();
  }

  /** A past message, compactly (a resumed conversation's transcript). */
  replay(message: AgentMessage): void {
    if (!("role" in message)) return;
    if (message.role === "user") return this.line(`› ${neutralize(contentText(message.content))}`, "cyan");
    if (message.role === "toolResult") {
      const mark = message.isError ? this.paint("red", "✗") : this.paint("green", "✓");
      this.line(`${mark} ${neutralize(message.toolName)}`);
      return this.resultLines(contentText(message.content), message.isError, 1);
    }
    if (message.role !== "assistant") return;
    for (const block of message.content) {
      if (block.type === "text") this.stream(block.text);
      if (block.type === "toolCall")
        this.line(`${this.paint("yellow", "⚙")} ${neutralize(block.name)} ${preview(argsText(block.arguments), 90)}`);
    }
    this.endLine();
    if (message.stopReason === "aborted") this.line("(interrupted)", "dim");
    if (message.stopReason === "error")
      this.line(`error: ${neutralize(message.errorMessage ?? "the turn failed")}`, "red");
  }

  private messageEnd(message: AgentMessage): void {
    if (!("role" in message) || message.role !== "assistant") return;
    this.endLine();
    if (message.stopReason === "aborted") this.line("(interrupted: the run was stopped)", "dim");
    else if (message.stopReason === "error")
      this.line(`error: ${neutralize(message.errorMessage ?? "the turn failed")}`, "red");
  }

  private resultLines(text: string, isError: boolean, max = RESULT_LINES): void {
    const lines = text.split("\n");
    const shown = lines.slice(0, max);
    if (lines.length > shown.length) shown.push(`… ${lines.length - shown.length} more line(s)`);
    for (const line of shown) this.line(`  │ ${preview(line, this.width() - 6)}`, isError ? "red" : "dim");
  }

  /**
   * Streamed text, wrapped at word boundaries to the terminal's width. A word cut by the end of a
   * delta waits for the next one (or the end of the message), so it is never broken in two.
   */
  private stream(text: string, style?: Style): void {
    if (style !== this.pendingStyle) this.flushWord();
    const joined = this.pendingWord + neutralize(text);
    const tail = /[^\s]+$/.exec(joined)?.[0] ?? "";
    this.pendingWord = tail.length < this.width() ? tail : "";
    this.pendingStyle = style;
    this.write(joined.slice(0, joined.length - this.pendingWord.length), style);
  }

  /** Writes the word held back by `stream`. */
  private flushWord(): void {
    const word = this.pendingWord;
    this.pendingWord = "";
    if (word !== "") this.write(word, this.pendingStyle);
  }

  private write(text: string, style?: Style): void {
    this.clearTicker();
    const width = this.width();
    for (const part of text.split(/(\n|[ \t]+)/)) {
      if (part === "") continue;
      if (part === "\n") {
        this.raw("\n");
        this.column = 0;
        continue;
      }
      if (/^[ \t]+$/.test(part)) {
        if (this.column === 0) continue;
        if (this.column + part.length >= width) {
          this.raw("\n");
          this.column = 0;
          continue;
        }
        this.raw(part);
        this.column += part.length;
        continue;
      }
      let word = part;
      if (this.column > 0 && this.column + word.length > width && word.length <= width) {
        this.raw("\n");
        this.column = 0;
      }
      while (this.column + word.length > width) {
        const room = width - this.column;
        this.raw(this.styled(word.slice(0, room), style) + "\n");
        word = word.slice(room);
        this.column = 0;
      }
      this.raw(this.styled(word, style));
      this.column += word.length;
    }
  }

  private styled(text: string, style: Style | undefined): string {
    return style === undefined || text === "" ? text : this.paint(style, text);
  }

  private width(): number {
    const columns = this.out.columns();
    return columns === undefined || columns < 20 ? Infinity : columns;
  }

  private startTicker(what: string): void {
    if (!this.out.ticker) return;
    if (this.timer !== undefined) clearInterval(this.timer);
    const since = Date.now();
    this.tickerText = () => `… ${what} ${seconds(Date.now() - since)}`;
    this.timer = setInterval(() => {
      if (this.column > 0) return;
      this.drawTicker();
    }, 1000);
    this.timer.unref();
  }

  /** The ticker line: the elapsed time, then what is being typed (cut to the terminal's width). */
  private drawTicker(): void {
    if (this.tickerText === undefined) return;
    const ticker = this.tickerText();
    const room = this.width() - ticker.length - 4;
    const typed =
      this.typing === "" || room < 8
        ? ""
        : `  › ${this.typing.length > room ? `…${this.typing.slice(-(room - 1))}` : this.typing}`;
    this.raw(`\r\u001b[K${this.paint("dim", ticker)}${typed}`);
    this.tickerShown = true;
  }

  private clearTicker(): void {
    if (!this.tickerShown) return;
    this.tickerShown = false;
    this.out.write("\r\u001b[K");
  }

  private raw(text: string): void {
    this.clearTicker();
    this.out.write(text);
    const lastNewline = text.lastIndexOf("\n");
    if (lastNewline !== -1) this.column = visibleLength(text.slice(lastNewline + 1));
  }
}

/** `text` cut into lines of at most `width` visible characters, at spaces (a longer word stays whole). */
function wrapWords(text: string, width: number): string[] {
  if (visibleLength(text) <= width) return [text];
  const lines: string[] = [];
  let current = "";
  for (const word of text.split(" ")) {
    if (current !== "" && visibleLength(current) + 1 + visibleLength(word) > width) {
      lines.push(current);
      current = word;
    } else current = current === "" ? word : `${current} ${word}`;
  }
  lines.push(current);
  return lines;
}

function visibleLength(text: string): number {
  return text.replace(/\u001b\[[0-9;]*m/g, "").length;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function argsText(args: unknown): string {
  if (typeof args === "object" && args !== null) {
    const record = args as Record<string, unknown>;
    // The one argument a person wants to see first.
    for (const key of ["command", "path"]) if (typeof record[key] === "string") return record[key] as string;
  }
  return JSON.stringify(args) ?? "";
}

function resultText(result: AgentToolResult<unknown>): string {
  return contentText(result.content);
}

/** The prefix of a tool line: none, or `  ↳ ` for a script's nested call (shown under its script). */
function nestedMark(event: AgentEvent): string {
  return "parentToolCallId" in event && event.parentToolCallId !== undefined ? "  ↳ " : "";
}
