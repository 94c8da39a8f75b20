/**
 * One line that says what an entry of the tree is: who spoke and the start of what was said.
 * `/tree` prints it (control characters neutralised by the CLI) and the session page shows it
 * in the tree beside the transcript (escaped by the page). The text is raw: the caller makes it
 * safe for where it goes.
 */
import type { ShownEntry } from "./tree.js";

/** Who and what, for one line. */
export interface Headline {
  /** `user`, `assistant`, `toolResult`, `summary`, or a custom message's role. */
  role: string;
  /** The start of the entry's text on one line (whitespace runs made one space). */
  text: string;
  /** A tool result that is an error, or an assistant turn that ended in error or was aborted. */
  failed: boolean;
}

/** The headline of `entry`, its text cut to `max` characters (with `…`). */
export function headlineOf(entry: ShownEntry, max = 80): Headline {
  if (entry.type === "compaction") {
    return {
      role: "summary",
      text: cut(`compacted (${entry.tokensBefore} → ${entry.tokensAfter} tokens): ${entry.summary}`, max),
      failed: false,
    };
  }
  const message = entry.message as {
    role?: unknown;
    content?: unknown;
    stopReason?: unknown;
    isError?: unknown;
    toolName?: unknown;
    errorMessage?: unknown;
  };
  const role = typeof message.role === "string" ? message.role : "message";
  const parts: string[] = [];
  const blocks = Array.isArray(message.content) ? (message.content as { type?: unknown }[]) : [];
  for (const block of blocks) {
    if (typeof block !== "object" || block === null) continue;
    const b = block as Record<string, unknown>;
    if (b.type === "text" && typeof b.text === "string") parts.push(b.text);
    else if (b.type === "toolCall") parts.push(`→ ${String(b.name)}(${argumentsPreview(b.arguments)})`);
    else if (b.type === "image") parts.push("[image]");
    else if (b.type === "thinking" && parts.length === 0 && blocks.length === 1) parts.push("[thinking]");
  }
  if (typeof message.content === "string") parts.push(message.content);
  let text = parts.join(" ");
  if (role === "toolResult") text = `${String(message.toolName)}: ${text}`;
  if (role === "assistant" && (message.stopReason === "error" || message.stopReason === "aborted")) {
    text = `[${message.stopReason}] ${text || (typeof message.errorMessage === "string" ? message.errorMessage : "")}`;
  }
  const failed = message.isError === true || message.stopReason === "error" || message.stopReason === "aborted";
  return { role, text: cut(text, max), failed };
}

/** The first argument of a tool call as `key: value`, for a one-line preview (raw text: escape it where it goes). */
export function argumentsPreview(value: unknown): string {
  if (typeof value !== "object" || value === null) return "";
  const first = Object.entries(value as Record<string, unknown>)[0];
  if (first === undefined) return "";
  const [key, v] = first;
  return `${key}: ${typeof v === "string" ? v : JSON.stringify(v)}`;
}

function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  // Never end on half of a surrogate pair.
  return `${flat.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, "")}…`;
}
