/**
 * Constructors and projections for canonical messages.
 *
 * Constructors set the timestamp at the boundary (override it with `timestamp`) and copy what
 * they are given, so a message never shares arrays with the caller.
 */
import type {
  AssistantContent,
  AssistantMessage,
  Message,
  StopReason,
  ToolResultMessage,
  Usage,
  UserContent,
  UserMessage,
} from "./types.js";

/** All-zero usage: the explicit default when a provider reports none. Frozen; copy it. */
export const EMPTY_USAGE: Readonly<Usage> = Object.freeze({ input: 0, output: 0, totalTokens: 0 });

/** Text, or content blocks (text and images), as the constructors accept them. */
export type TextInput = string | readonly UserContent[];

function toTextBlocks(input: TextInput): UserContent[] {
  // #region lab 3.1 toTextBlocks
  if (typeof input === "string") return [{ type: "text", text: input }];
  return input.map((block): UserContent => {
    if (block.type === "image") return { type: "image", data: block.data, mimeType: block.mimeType };
    return { type: "text", text: block.text };
  });
  // #endregion
}

/** A user message from a string or content blocks (copied). */
export function userMessage(content: TextInput, options: { timestamp?: number } = {}): UserMessage {
  // #region lab 3.1 userMessage
  return { role: "user", content: toTextBlocks(content), timestamp: options.timestamp ?? Date.now() };
  // #endregion
}

/** Fields of an assistant message that `assistantMessage` lets you set. */
export type AssistantMessageOverrides = Partial<Omit<AssistantMessage, "role" | "content" | "stopReason">>;

/**
 * An assistant message. Defaults: `provider` and `model` `"unknown"`, all-zero usage, the
 * current time. Content blocks are deep-copied.
 */
export function assistantMessage(
  content: readonly AssistantContent[],
  stopReason: StopReason,
  overrides: AssistantMessageOverrides = {},
): AssistantMessage {
  // #region lab 3.1 assistantMessage
  return {
    role: "assistant",
    content: structuredClone(content as AssistantContent[]),
    provider: overrides.provider ?? "unknown",
    model: overrides.model ?? "unknown",
    usage: { ...(overrides.usage ?? EMPTY_USAGE) },
    stopReason,
    ...(overrides.errorMessage !== undefined && { errorMessage: overrides.errorMessage }),
    // #region ch05
    ...(overrides.diagnostics !== undefined && { diagnostics: [...overrides.diagnostics] }),
    // #endregion
    timestamp: overrides.timestamp ?? Date.now(),
  };
  // #endregion
}

/** What `toolResultMessage` needs. */
export interface ToolResultInput<TDetails = unknown> {
  toolCallId: string;
  toolName: string;
  content: TextInput;
  details?: TDetails;
  /** Defaults to false. */
  isError?: boolean;
  timestamp?: number;
}

/** The result of one tool call, ready to send back to the model. */
export function toolResultMessage<TDetails = unknown>(input: ToolResultInput<TDetails>): ToolResultMessage<TDetails> {
  // #region lab 3.1 toolResultMessage
  return {
    role: "toolResult",
    toolCallId: input.toolCallId,
    toolName: input.toolName,
    content: toTextBlocks(input.content),
    ...(input.details !== undefined && { details: input.details }),
    isError: input.isError ?? false,
    timestamp: input.timestamp ?? Date.now(),
  };
  // #endregion
}

/**
 * The text of a message, **lossy**: text blocks joined with `"\n"`; tool calls (and reasoning)
 * are skipped. For logs and quick assertions, never for replay. The message is not changed.
 */
export function textOf(message: Message): string {
  // #region lab 3.2 textOf
  const parts: string[] = [];
  for (const block of message.content) {
    if (block.type === "text") parts.push(block.text);
  }
  return parts.join("\n");
  // #endregion
}
