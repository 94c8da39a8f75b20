/**
 * Token estimates for the context budget (chapter 11).
 *
 * A projection needs one number per message, to drop whole interactions from the oldest until
 * the rest fits. The estimator is pluggable (`TokenEstimator`); the default, `estimateTokens`,
 * works like this:
 *
 * 1. **chars/4**: every message costs `ceil(chars / 4)` tokens, where `chars` counts what the
 *    model reads: text blocks, thinking, each tool call's name and argument text (`rawArguments`,
 *    else the JSON of `arguments`), a tool result's text. A custom message (an app's own role)
 *    counts the length of its JSON: its shape is unknown here, and `convertToLlm` may turn it
 *    into anything, so the whole of it is the safe guess. An `error` or `aborted` assistant
 *    message costs 0: the model never sees it (`defaultConvertToLlm` and the wire drop it).
 *    The system prompt is `ceil(chars / 4)` as well. An image (in a user message or a tool
 *    result) counts as `IMAGE_TOKENS` whatever its size: the providers bill an image by its
 *    pixels, not by its base64 length, and 1,600 tokens is about what Anthropic bills for an
 *    image at the size it scales images down to (OpenAI's high-detail tiles cost less), so the
 *    guess errs on the side of fitting.
 * 2. **exact usage, where present**: the newest assistant message at or after `usageFrom` whose
 *    usage can be trusted (not error/aborted, `totalTokens > 0`) reports what the model really
 *    counted for everything up to and including it. The estimates of the system prompt and of
 *    the messages up to it are scaled by one factor so that they add up to that `totalTokens`
 *    exactly; messages after it keep their chars/4 estimate. The total of the whole context is
 *    then "last usage + chars/4 of what came after", and dropping old messages subtracts their
 *    share. Usage from before `usageFrom` (e.g. from before a compaction, when the model saw a
 *    longer context than the one now projected) is ignored.
 *
 * Caveat: a usage is exact for the context the model was sent. If the caller had trimmed that
 * context, the usage is smaller than the untrimmed messages would cost, and the scaled estimate
 * of the older messages is low. Pass your own estimator (e.g. a real tokenizer) when that matters.
 */
import type { AgentMessage, AssistantMessage, UserMessage, ToolResultMessage } from "../types.js";

/** What an estimator is asked to count. */
export interface TokenEstimateInput {
  systemPrompt?: string;
  messages: readonly AgentMessage[];
  /**
   * Assistant usage is trusted only from this index on (default 0). A projection passes the
   * index of the first message appended after the newest compaction.
   */
  usageFrom?: number;
}

/** Tokens of the system prompt, and of each message (same order, same length as the input). */
export interface TokenCounts {
  systemPrompt: number;
  messages: number[];
}

/**
 * Counts tokens for a projection.
 * Contract: pure and deterministic (same input, same counts); returns one finite, non-negative
 * number per message; never mutates its input. A projection refuses counts that break this.
 */
export type TokenEstimator = (input: TokenEstimateInput) => TokenCounts;

/** Characters per token of the chars/4 estimate. */
export const CHARS_PER_TOKEN = 4;

/** Tokens one image block is counted as (see the module comment). */
export const IMAGE_TOKENS = 1_600;

/** The characters of a message the model reads (see the module comment); 0 for error/aborted. */
export function charsOf(message: AgentMessage): number {
  switch (message.role) {
    case "user":
      return textChars((message as UserMessage).content);
    case "toolResult":
      return textChars((message as ToolResultMessage).content) + (message as ToolResultMessage).toolName.length;
    case "assistant": {
      const assistant = message as AssistantMessage;
      if (assistant.stopReason === "error" || assistant.stopReason === "aborted") return 0;
      let chars = 0;
      for (const block of assistant.content) {
        if (block.type === "text") chars += block.text.length;
        else if (block.type === "toolCall") {
          chars += block.name.length + (block.rawArguments ?? JSON.stringify(block.arguments) ?? "").length;
        } else if (block.type === "thinking") chars += block.thinking.length;
      }
      return chars;
    }
    default:
      return JSON.stringify(message)?.length ?? 0;
  }
}

function textChars(content: readonly { type: string; text?: string }[]): number {
  let chars = 0;
  for (const block of content) {
    if (typeof block.text === "string") chars += block.text.length;
    else if (block.type === "image") chars += IMAGE_TOKENS * CHARS_PER_TOKEN;
  }
  return chars;
}

/** `true` when an assistant message's usage says what the model really counted. */
export function hasTrustedUsage(message: AgentMessage): message is AssistantMessage {
  if (message.role !== "assistant") return false;
  const assistant = message as AssistantMessage;
  return (
    assistant.stopReason !== "error" &&
    assistant.stopReason !== "aborted" &&
    Number.isFinite(assistant.usage?.totalTokens) &&
    assistant.usage.totalTokens > 0
  );
}

/** The default estimator: chars/4, scaled to the newest trusted usage (see the module comment). */
export const estimateTokens: TokenEstimator = ({ systemPrompt, messages, usageFrom = 0 }) => {
  const counts: TokenCounts = {
    systemPrompt: Math.ceil((systemPrompt ?? "").length / CHARS_PER_TOKEN),
    messages: messages.map((m) => Math.ceil(charsOf(m) / CHARS_PER_TOKEN)),
  };
  let anchor = -1;
  for (let i = messages.length - 1; i >= Math.max(0, usageFrom); i--) {
    if (hasTrustedUsage(messages[i]!)) {
      anchor = i;
      break;
    }
  }
  if (anchor < 0) return counts;
  const exact = (messages[anchor] as AssistantMessage).usage.totalTokens;
  let estimated = counts.systemPrompt;
  for (let i = 0; i <= anchor; i++) estimated += counts.messages[i]!;
  if (estimated === 0) {
    // nothing to scale: the whole usage belongs to the message that reported it
    counts.messages[anchor] = exact;
    return counts;
  }
  // Scale the prefix so that it sums to `exact`: round down, and the remainder (never negative)
  // goes to the message that reported the usage.
  const factor = exact / estimated;
  let sum = (counts.systemPrompt = Math.floor(counts.systemPrompt * factor));
  for (let i = 0; i < anchor; i++) sum += counts.messages[i] = Math.floor(counts.messages[i]! * factor);
  counts.messages[anchor] = exact - sum;
  return counts;
};

/**
 * Runs an estimator and checks its contract: one finite, non-negative count per message.
 * Throws a `TypeError` naming `who` (the caller) when the estimator breaks it.
 */
export function countTokens(estimator: TokenEstimator, input: TokenEstimateInput, who: string): TokenCounts {
  const counts = estimator(input);
  const length = input.messages.length;
  const ok = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  if (!counts || !ok(counts.systemPrompt) || !Array.isArray(counts.messages) || counts.messages.length !== length) {
    throw new TypeError(
      `${who}: the estimator must return { systemPrompt, messages } with one count per message (${length}).`,
    );
  }
  const bad = counts.messages.findIndex((n) => !ok(n));
  if (bad >= 0) {
    throw new TypeError(
      `${who}: the estimator counted message ${bad} as ${String(counts.messages[bad])}; counts must be finite and >= 0.`,
    );
  }
  return counts;
}
