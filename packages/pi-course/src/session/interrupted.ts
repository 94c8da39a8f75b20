/**
 * Tool calls a crash left without a result.
 *
 * If the process dies while a tool runs (a kill, a power cut), the session ends with the
 * assistant's tool call and no result. Sent as it is, that transcript is refused by every real
 * server (OpenAI and Anthropic answer HTTP 400: each call needs its result right after it), so
 * the conversation could never go on. Whenever a transcript is loaded, each such call gets a
 * synthetic error result saying it was interrupted, the same shape an abort gives a call it
 * stops (`isError: true`, one text block, no details).
 */
import type { AgentMessage, ToolResultMessage } from "../types.js";

/** The text of the result given to a call a crash left unanswered. */
export function interruptedText(toolName: string): string {
  return (
    `Tool call "${toolName}" was interrupted: the process running it stopped before it finished, ` +
    `so its result was lost. Run it again if it is still needed.`
  );
}

/** What `answerInterruptedCalls` returns. */
export interface InterruptedCalls {
  /** The transcript with a synthetic result after each unanswered call (the input itself when none). */
  messages: AgentMessage[];
  /**
   * The synthetic results, oldest first, each with its index in `messages`, and `atEnd` when
   * nothing but results follows it (a session can take it as the next entry of its path).
   */
  added: { index: number; message: ToolResultMessage; atEnd: boolean }[];
}

/**
 * Gives every tool call of `messages` that has no result an error result saying it was
 * interrupted, placed right after the call's other results (before the next user or assistant
 * message), so each call is answered before the model is asked again. Calls inside error or
 * aborted assistant messages are never executed and need none. Pure: `messages` is not changed.
 */
export function answerInterruptedCalls(messages: readonly AgentMessage[], now = Date.now()): InterruptedCalls {
  const out: AgentMessage[] = [];
  const added: InterruptedCalls["added"] = [];
  let pending = new Map<string, string>();
  const close = (atEnd: boolean) => {
    for (const [id, name] of pending) {
      const message: ToolResultMessage = {
        role: "toolResult",
        toolCallId: id,
        toolName: name,
        content: [{ type: "text", text: interruptedText(name) }],
        isError: true,
        timestamp: now,
      };
      added.push({ index: out.length, message, atEnd });
      out.push(message);
    }
    pending = new Map();
  };
  for (const message of messages) {
    if (message.role === "toolResult") {
      pending.delete(message.toolCallId);
    } else if (message.role === "user" || message.role === "assistant") {
      close(false);
      if (message.role === "assistant" && message.stopReason !== "error" && message.stopReason !== "aborted") {
        for (const block of message.content) if (block.type === "toolCall") pending.set(block.id, block.name);
      }
    }
    out.push(message);
  }
  close(true);
  return { messages: added.length === 0 ? (messages as AgentMessage[]) : out, added };
}
