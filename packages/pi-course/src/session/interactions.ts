/**
 * Interactions: the units a context projection keeps or drops whole (chapter 11).
 *
 * An interaction starts at a user message and runs up to the next one: the user's request, the
 * model's turns, every tool call with its result, steering and custom messages in between.
 * Dropping whole interactions from the oldest keeps the rest of the transcript well formed: no
 * tool result loses its call, no call loses its result, parallel calls stay with all their
 * results, and what is left starts with a user message.
 *
 * Pairing is by `toolCallId`, not by position, so results that arrive in another order than
 * their calls still pair. A user message that sits between a call and its result (a transcript
 * the loop never writes, but a hand-made one might) does not start an interaction: a boundary
 * there would split the pair. Messages before the first user message (custom messages, say)
 * form a leading interaction of their own.
 */
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../types.js";

/** A run of messages `[start, end)` of a transcript, kept or dropped as one. */
export interface Interaction {
  /** Index of the first message (a user message, except for a leading interaction). */
  start: number;
  /** Index one past the last message. */
  end: number;
}

/**
 * Where a transcript may be cut: `open[i]` is true when some tool call before index `i` has its
 * result at `i` or later, so cutting just before `i` would separate them.
 *
 * Throws a `TypeError` (the transcript is malformed, and a provider would refuse it) for a tool
 * result with no call before it, a second result for one call, or a result answering a call of
 * an `error`/`aborted` assistant message (the model never sees that message, so on the wire the
 * result would be an orphan). A call with no result (an aborted turn, a run in progress) is fine.
 */
export function openSpans(messages: readonly AgentMessage[]): boolean[] {
  // #region lab 11.1 openSpans
  // One hash lookup per call and one per result: a call id maps to the index of its assistant
  // message while unanswered, and to -1 once answered (the index of its message's last result
  // is kept in an array by position, not in a second map).
  const callAt = new Map<string, number>(); // call id → index of its assistant message, or -1 once answered
  const lastResultAt = new Int32Array(messages.length).fill(-1); // assistant index → its last result
  let unreachable: Set<string> | undefined; // calls of error/aborted messages (rare)
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "assistant") {
      const assistant = message as AssistantMessage;
      const failed = assistant.stopReason === "error" || assistant.stopReason === "aborted";
      for (const block of assistant.content) {
        if (block.type !== "toolCall") continue;
        if (failed) (unreachable ??= new Set()).add(block.id);
        else if (callAt.get(block.id) !== -1) callAt.set(block.id, i); // an answered id stays answered
      }
    } else if (message.role === "toolResult") {
      const id = (message as ToolResultMessage).toolCallId;
      const at = callAt.get(id);
      if (at === undefined) {
        const why = unreachable?.has(id)
          ? "answers a call of an error/aborted assistant message, which the model never sees"
          : "has no tool call before it";
        throw new TypeError(
          `transcript message ${i}: the tool result for call "${id}" ${why}; a provider would refuse ` +
            `the context. Fix the transcript (or the compaction that cut it) so every result follows its call.`,
        );
      }
      if (at < 0) {
        throw new TypeError(
          `transcript message ${i}: a second tool result for call "${id}"; each call gets exactly one result.`,
        );
      }
      callAt.set(id, -1);
      lastResultAt[at] = i;
    }
  }
  // A span is open from just after the assistant message to its last result.
  const open = new Array<boolean>(messages.length).fill(false);
  let reach = -1;
  for (let i = 0; i < messages.length; i++) {
    if (reach >= i) open[i] = true;
    const last = lastResultAt[i]!;
    if (last > reach) reach = last;
  }
  return open;
  // #endregion
}

/**
 * Splits a transcript into interactions, oldest first, covering every message exactly once.
 * Throws what `openSpans` throws for a malformed transcript.
 */
export function groupInteractions(messages: readonly AgentMessage[]): Interaction[] {
  // #region lab 11.1 groupInteractions
  const open = openSpans(messages);
  const groups: Interaction[] = [];
  let start = 0;
  for (let i = 1; i < messages.length; i++) {
    if (messages[i]!.role === "user" && !open[i]) {
      groups.push({ start, end: i });
      start = i;
    }
  }
  if (messages.length > 0) groups.push({ start, end: messages.length });
  return groups;
  // #endregion
}
