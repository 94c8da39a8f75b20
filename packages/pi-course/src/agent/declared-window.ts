/**
 * Chapter 15, given: the deferred tools a conversation keeps declared. `tool_search` declares up
 * to five tools a search; without a bound a long conversation would end up declaring every tool it
 * ever searched for, which is what deferring was meant to avoid. The window keeps the
 * `MAX_DECLARED_DEFERRED` deferred tools most recently declared (by a search's result, or by a
 * compaction summary) or called by the model; an older one drops out of the declared set (a call
 * to it is refused as undeclared, and a search declares it again). It is read from the transcript
 * alone, so a resumed or compacted run keeps the same window.
 */
import type { AgentMessage, AgentTool } from "../types.js";

/** The most deferred tools declared at once: 20 (the CLI defers MCP tools above 20 too). */
export const MAX_DECLARED_DEFERRED = 20;

/** The deferred tools kept declared, oldest first; `limit` at most. */
export class DeclaredWindow {
  /** Oldest first. */
  private readonly names: string[] = [];

  private constructor(
    private readonly deferred: ReadonlySet<string>,
    readonly limit: number,
  ) {}

  /** The window `messages` leave over the deferred tools of `tools`. */
  static read(
    tools: readonly AgentTool<any, any>[],
    messages: readonly AgentMessage[],
    limit = MAX_DECLARED_DEFERRED,
  ): DeclaredWindow {
    const deferred = new Set(tools.filter((tool) => tool.exposure === "deferred").map((tool) => tool.name));
    const window = new DeclaredWindow(deferred, limit);
    for (const message of messages) {
      if (message.role === "assistant") {
        for (const block of message.content) if (block.type === "toolCall") window.used(block.name);
      } else if ((message.role === "toolResult" || message.role === "user") && Array.isArray(message.declaredTools)) {
        window.declare(message.declaredTools);
      }
    }
    return window;
  }

  /** Whether `name` is in the window. */
  has(name: string): boolean {
    return this.names.includes(name);
  }

  /** `names` (deferred ones) declared now: newest in the window; returns the names that dropped out. */
  declare(names: readonly string[]): string[] {
    for (const name of names) if (this.deferred.has(name)) this.move(name);
    return this.names.splice(0, Math.max(0, this.names.length - this.limit));
  }

  /** `name` was called: if it is in the window, it is the newest. */
  used(name: string): void {
    if (this.has(name)) this.move(name);
  }

  private move(name: string): void {
    const at = this.names.indexOf(name);
    if (at !== -1) this.names.splice(at, 1);
    this.names.push(name);
  }
}
