/**
 * Test support for chapter 11: message builders with fixed timestamps, and `MemorySession`, a
 * session tree over a plain array that implements `CompactableSession` (the shape compaction
 * needs of a chapter 10 `SessionFile`), so chapter 11 is tested without a file on disk.
 */
import type { CompactableSession, CompactionDraft } from "../../src/session/compaction.js";
import type {
  AgentMessage,
  AssistantMessage,
  ToolCall,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "../../src/types.js";
import type { SessionEntry } from "../../src/session/types.js";

export const T0 = Date.UTC(2026, 0, 1);

export function user(text: string): UserMessage {
  return { role: "user", content: [{ type: "text", text }], timestamp: T0 };
}

export function call(id: string, name: string, args: Record<string, unknown> = {}): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

export function assistant(
  content: string | (ToolCall | { type: "text"; text: string })[],
  options: { stopReason?: AssistantMessage["stopReason"]; usage?: Partial<Usage>; errorMessage?: string } = {},
): AssistantMessage {
  const blocks = typeof content === "string" ? [{ type: "text" as const, text: content }] : content;
  const stopReason = options.stopReason ?? (blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop");
  const usage = { input: 0, output: 0, totalTokens: 0, ...options.usage };
  return {
    role: "assistant",
    content: blocks,
    provider: "test",
    model: "test-model",
    usage,
    stopReason,
    ...(options.errorMessage !== undefined && { errorMessage: options.errorMessage }),
    timestamp: T0,
  };
}

export function result(toolCallId: string, text: string, toolName = "read", isError = false): ToolResultMessage {
  return { role: "toolResult", toolCallId, toolName, content: [{ type: "text", text }], isError, timestamp: T0 };
}

/** A message of an app's own role (not one of the three canonical ones). */
export function note(text: string): AgentMessage {
  return { role: "note", text, timestamp: T0 } as unknown as AgentMessage;
}

/** `n` characters of text: `n / 4` tokens for the chars/4 estimate. */
export function chars(n: number, fill = "x"): string {
  return fill.repeat(n);
}

/** A session tree in memory. Ids are `e0`, `e1`, …; timestamps advance one second per entry. */
export class MemorySession implements CompactableSession {
  readonly entries: SessionEntry[] = [];
  leaf: string | null = null;
  /** Set to make the next `append` reject (then cleared). */
  failNextAppend: Error | undefined;
  private readonly byId = new Map<string, SessionEntry>();

  /** Appends message entries as children of the leaf; returns their ids. */
  add(...messages: AgentMessage[]): string[] {
    return messages.map((message) => this.put({ type: "message", parentId: this.leaf, message }));
  }

  append(entry: CompactionDraft): Promise<string> {
    if (this.failNextAppend) {
      const error = this.failNextAppend;
      this.failNextAppend = undefined;
      return Promise.reject(error);
    }
    return Promise.resolve(this.put(entry));
  }

  pathToLeaf(id: string): SessionEntry[] {
    const path: SessionEntry[] = [];
    for (
      let entry = this.byId.get(id);
      entry;
      entry = entry.parentId === null ? undefined : this.byId.get(entry.parentId)
    ) {
      path.push(entry);
    }
    if (path.length === 0) throw new Error(`MemorySession: no entry "${id}"`);
    return path.reverse();
  }

  /** The path to the leaf ([] when empty). */
  path(): SessionEntry[] {
    return this.leaf === null ? [] : this.pathToLeaf(this.leaf);
  }

  private put(draft: Record<string, unknown> & { parentId: string | null }): string {
    const id = `e${this.entries.length}`;
    const entry = {
      ...draft,
      id,
      timestamp: new Date(T0 + this.entries.length * 1000).toISOString(),
    } as unknown as SessionEntry;
    this.entries.push(entry);
    this.byId.set(id, entry);
    this.leaf = id;
    return id;
  }
}
