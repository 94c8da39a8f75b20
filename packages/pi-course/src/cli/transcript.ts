/**
 * A live transcript in one line: `agent.subscribe(transcriptPrinter())` renders every event as
 * the CLI's conversation does (the answer streamed and wrapped, each tool call with the first
 * lines of its result, errors in red), for a program that wants to show what its agent does.
 */
import type { AgentEvent } from "../agent/types.js";
import { ChatPrinter } from "./render.js";

/** Where and how `transcriptPrinter` writes. Every field has a default taken from `process.stdout`. */
export interface TranscriptOptions {
  /** Receives the text (default: `process.stdout.write`). */
  write?: (text: string) => void;
  /** ANSI colours (default: stdout is a terminal and `NO_COLOR` is unset). */
  color?: boolean;
  /** Wrap streamed text to this width (default: the terminal's width; no wrapping when piped). */
  columns?: number;
}

/**
 * Returns a listener that renders each `AgentEvent` as the CLI does: `agent.subscribe(transcriptPrinter())`,
 * or `for await (const e of run) print(e)` over an `agentLoop` run. Model and command text is
 * shown with its control characters neutralised; nothing is printed for events it does not show.
 */
export function transcriptPrinter(options: TranscriptOptions = {}): (event: AgentEvent) => void {
  const stdout = process.stdout;
  const printer = new ChatPrinter({
    write: options.write ?? ((text) => void stdout.write(text)),
    color: options.color ?? (stdout.isTTY === true && process.env.NO_COLOR === undefined),
    columns: () => options.columns ?? (stdout.isTTY === true ? stdout.columns : undefined),
    ticker: false,
  });
  return (event) => printer.print(event);
}
