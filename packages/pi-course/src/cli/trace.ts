/**
 * The live trace of an agent run: every `AgentEvent`, one line each, indented by what it belongs
 * to (the run, a turn, a message or a tool call), so a newcomer can follow the lifecycle.
 *
 * Streaming updates of one content block share a line: the label once, then the deltas as they
 * arrive, then the number of updates. With `json`, every event is one line of JSON instead;
 * `message_update` lines then carry only the model event without its live views (`partial`,
 * `partialArguments`) and without the partial `message`, so the output grows with the answer,
 * not with its square (`message_end` carries the whole message).
 *
 * Model text, tool output and everything else that comes from outside goes through `neutralize`
 * before it reaches the terminal: a model or a command cannot clear the screen, set the window
 * title or write the clipboard (OSC 52) through the trace.
 */
import { textOf } from "../messages.js";
import type { AgentEvent } from "../agent/types.js";
import type { AgentMessage, AgentToolResult, ModelEvent, UserContent } from "../types.js";
import { neutralize } from "./terminal-text.js";

/** The terminal guard's character rule (terminal-text.ts), where the CLI's printers have always imported it. */
export { neutralize };

export interface TraceOptions {
  /** Where text goes (e.g. `process.stdout.write`). */
  write: (text: string) => void;
  color: boolean;
  json: boolean;
  /** With `json`: fields added to the `agent_end` line (a feature's: the conversation's cost). */
  agentEndFields?: () => Record<string, unknown>;
}

const CODES = { dim: 2, bold: 1, red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36 } as const;
type Style = keyof typeof CODES;

/** Prints events as they come; `finish()` closes an open streaming line. */
export class TracePrinter {
  private openLine: { key: string; count: number } | undefined;
  private turn = 0;

  constructor(private readonly options: TraceOptions) {}

  print(event: AgentEvent): void {
    if (this.options.json) {
      if (event.type === "agent_end" && this.options.agentEndFields !== undefined) {
        this.options.write(`${JSON.stringify({ ...event, ...this.options.agentEndFields() }, roundedDollars)}\n`);
        return;
      }
      const shown = event.type === "message_update" ? compactUpdate(event.event) : event;
      this.options.write(`${JSON.stringify(shown, roundedDollars)}\n`);
      return;
    }
    if (event.type === "message_update") {
      this.update(event.event);
      return;
    }
    this.finish();
    switch (event.type) {
      case "agent_start":
        return this.line(0, "magenta", event.type);
      case "agent_end":
        return this.line(0, "magenta", event.type, `${event.messages.length} new messages`);
      case "turn_start":
        this.turn++;
        return this.line(1, "cyan", event.type, `turn ${this.turn}`);
      case "turn_end":
        return this.line(
          1,
          "cyan",
          event.type,
          `turn ${this.turn} · stopReason=${event.message.stopReason} · ${event.toolResults.length} tool result(s)`,
        );
      case "message_start":
        return this.line(2, "blue", event.type, describeMessageStart(event.message));
      case "message_end":
        return this.messageEnd(event.message);
      case "tool_execution_start":
        return this.line(
          toolDepth(event),
          "yellow",
          event.type,
          `${neutralize(`${event.toolName} ${event.toolCallId}`)} ${preview(JSON.stringify(event.args))}`,
        );
      case "tool_execution_update":
        return this.line(
          toolDepth(event) + 1,
          "yellow",
          event.type,
          `${neutralize(event.toolName)} ${preview(resultText(event.partialResult))}`,
        );
      case "tool_execution_end": {
        const mark = event.isError ? this.paint("red", "✗ error") : this.paint("green", "✓ ok");
        this.line(
          toolDepth(event),
          "yellow",
          event.type,
          `${neutralize(`${event.toolName} ${event.toolCallId}`)} ${mark}`,
        );
        return this.block(toolDepth(event) + 2, resultText(event.result), event.isError ? "red" : "dim");
      }
    }
  }

  /** Ends an open streaming line, if any. */
  finish(): void {
    if (this.openLine === undefined) return;
    this.options.write(
      `${this.paint("dim", `  (${this.openLine.count} update${this.openLine.count === 1 ? "" : "s"})`)}\n`,
    );
    this.openLine = undefined;
  }

  private update(event: ModelEvent): void {
    const index = "contentIndex" in event ? event.contentIndex : -1;
    const key = `${event.type}:${index}`;
    if (event.type === "text_delta" || event.type === "thinking_delta" || event.type === "toolcall_delta") {
      if (this.openLine?.key !== key) {
        this.finish();
        const name = event.type === "toolcall_delta" ? ` ${neutralize(toolName(event))}` : "";
        this.options.write(`${this.label(3, "blue", "message_update")}${this.paint("dim", `${event.type}${name} `)}`);
        this.openLine = { key, count: 0 };
      }
      this.openLine.count++;
      this.options.write(
        this.paint(event.type === "thinking_delta" ? "dim" : "bold", neutralize(event.delta).replace(/\n/g, "⏎")),
      );
      return;
    }
    this.finish();
    const detail =
      event.type === "toolcall_end"
        ? neutralize(`${event.toolCall.name} ${event.toolCall.id}`)
        : event.type === "done" || event.type === "error"
          ? `reason=${event.reason}`
          : "";
    this.line(3, "blue", "message_update", `${this.paint("dim", event.type)} ${detail}`.trimEnd());
  }

  private messageEnd(message: AgentMessage): void {
    if (!("role" in message) || message.role !== "assistant") {
      const extra =
        "role" in message && message.role === "toolResult" && message.isError ? this.paint("red", " (isError)") : "";
      return this.line(2, "blue", "message_end", `${roleOf(message)}${extra}`);
    }
    const usage = `usage in=${message.usage.input} out=${message.usage.output}`;
    this.line(2, "blue", "message_end", `assistant · stopReason=${message.stopReason} · ${usage}`);
    if (message.errorMessage !== undefined) this.block(4, message.errorMessage, "red", Infinity);
  }

  private line(depth: number, style: Style, type: string, detail = ""): void {
    this.options.write(`${this.label(depth, style, type)}${detail}`.trimEnd() + "\n");
  }

  private label(depth: number, style: Style, type: string): string {
    const indent = "  ".repeat(depth);
    return `${indent}${this.paint(style, type.padEnd(Math.max(0, 26 - indent.length)))} `;
  }

  /** Indented lines (at most 8) of a tool's output or an error. */
  private block(depth: number, text: string, style: Style, max = 110): void {
    const lines = text.split("\n");
    const shown = lines.slice(0, 8);
    if (lines.length > shown.length) shown.push(`… ${lines.length - shown.length} more line(s)`);
    for (const line of shown)
      this.options.write(`${"  ".repeat(depth)}${this.paint(style, `│ ${preview(line, max)}`)}\n`);
  }

  private paint(style: Style, text: string): string {
    return this.options.color ? `\u001b[${CODES[style]}m${text}\u001b[0m` : text;
  }
}

function describeMessageStart(message: AgentMessage): string {
  if (!("role" in message)) return "custom";
  if (message.role === "user") return `user ${preview(JSON.stringify(textOf(message)))}`;
  if (message.role === "toolResult") return neutralize(`toolResult ${message.toolName} ${message.toolCallId}`);
  return roleOf(message);
}

function roleOf(message: AgentMessage): string {
  return "role" in message ? String(message.role) : "custom";
}

function toolName(event: Extract<ModelEvent, { type: "toolcall_delta" }>): string {
  const block = event.partial.content[event.contentIndex];
  return block?.type === "toolCall" ? block.name : "";
}

function resultText(result: AgentToolResult<unknown>): string {
  return contentText(result.content);
}

/** A user message's or tool result's content as text for the terminal: an image shows as `[image]`. */
export function contentText(content: readonly UserContent[]): string {
  return content.map((block) => (block.type === "text" ? block.text : "[image]")).join("\n");
}

/** One line, at most `max` characters, control characters neutralised. */
export function preview(text: string, max = 100): string {
  const flat = neutralize(text).replace(/\n/g, "⏎");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A `message_update` for `--json`: the model event without the partial message it points to. */
export function compactUpdate(event: ModelEvent): { type: "message_update"; event: Record<string, unknown> } {
  const {
    partial: _partial,
    partialArguments: _arguments,
    ...rest
  } = event as ModelEvent & {
    partial?: unknown;
    partialArguments?: unknown;
  };
  return { type: "message_update", event: rest };
}

/** The indentation of a tool event: 2, and one more for a script's nested call (under its script). */
function toolDepth(event: AgentEvent): number {
  return "parentToolCallId" in event && event.parentToolCallId !== undefined ? 3 : 2;
}

/**
 * The dollars of a cost (an object with a numeric `total`: a message's `cost`, a conversation's),
 * rounded once, here at the edge, to 12 significant digits: a sum of per-token prices carries
 * float noise (`0.000035000000000000004` for $0.000035). Every other number is left as it is.
 */
function roundedDollars(this: unknown, _key: string, value: unknown): unknown {
  if (typeof value !== "number" || Number.isInteger(value) || !Number.isFinite(value)) return value;
  const holder = this as { total?: unknown } | null;
  return typeof holder?.total === "number" ? Number(value.toPrecision(12)) : value;
}
