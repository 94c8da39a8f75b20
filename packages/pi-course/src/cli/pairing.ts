/**
 * The pairing check: before a model is asked, every tool call in the context must have exactly
 * one result with its id, and no result may answer a call that is not pending.
 *
 * Real servers refuse such a context too (OpenAI answers HTTP 400), but later and less clearly.
 * The main job wraps its model in this check; chapter 00's break-it experiment
 * (`--drop-tool-result`) trips it on purpose.
 */
import { AssistantMessageEventStream } from "../event-stream.js";
import { assistantMessage } from "../messages.js";
import type { Context, Message } from "../types.js";
import type { Model, StreamOptions } from "../model.js";

/** The first pairing problem in `messages`, in words, or undefined when every call is answered. */
export function findPairingProblem(messages: readonly Message[]): string | undefined {
  const pending = new Map<string, string>();
  const unanswered = () => {
    const [id, name] = pending.entries().next().value as [string, string];
    return (
      `tool call ${id} (${name}) has no result before the next model call. ` +
      `Every tool call needs exactly one result with its id.`
    );
  };
  for (const message of messages) {
    if (message.role === "toolResult") {
      if (!pending.delete(message.toolCallId)) {
        return `the tool result for ${message.toolCallId} (${message.toolName}) answers no pending tool call.`;
      }
      continue;
    }
    if (pending.size > 0) return unanswered();
    // An error or aborted answer ran no tools (every wire leaves it out): its calls need no result.
    if (message.role === "assistant" && message.stopReason !== "error" && message.stopReason !== "aborted") {
      for (const block of message.content) {
        if (block.type === "toolCall") pending.set(block.id, block.name);
      }
    }
  }
  return pending.size > 0 ? unanswered() : undefined;
}

/** `model`, but a context that fails the pairing check ends the turn with an `error` event. */
export function withPairingCheck(model: Model): Model {
  return {
    provider: model.provider,
    id: model.id,
    stream(context: Context, options?: StreamOptions): AssistantMessageEventStream {
      const problem = findPairingProblem(context.messages);
      if (problem === undefined) return model.stream(context, options);
      const stream = new AssistantMessageEventStream();
      const error = assistantMessage([], "error", {
        provider: model.provider,
        model: model.id,
        errorMessage: `pairing check: ${problem}`,
      });
      stream.push({ type: "error", reason: "error", error });
      return stream;
    },
  };
}
