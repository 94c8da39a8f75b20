/**
 * The OpenAI Chat Completions wire format, and the outbound translation from a canonical
 * `Context` to a request body. Pure functions: the context is never mutated, and the request
 * shares nothing mutable with it.
 *
 * Translation choices (each one keeps requests acceptable to strict OpenAI-compatible servers):
 * - the system prompt becomes a leading `system` message;
 * - a user message with one text block is sent as a string, with several as text parts;
 * - an assistant message sends its text blocks joined with `"\n"` and its tool calls as
 *   `tool_calls`; thinking blocks are not sent back; a message with neither text nor tool calls
 *   is left out, and so is an `error` / `aborted` message (it ran no tools, and its partial
 *   content is not something the model said to completion);
 * - a tool call's arguments are sent as `JSON.stringify(arguments)`: a call whose raw text was
 *   malformed or truncated has `arguments: {}`, so the request stays valid JSON and the call's
 *   error result (from the tool layer) tells the model what went wrong;
 * - a tool result becomes a `tool` message with its text blocks joined with `"\n"`.
 */
import { applyRequestOptions, type ChatRequestOptions } from "./openai-options.js";
import type { AssistantMessage, Context, Message, ToolCall, ToolDefinition } from "./types.js";

/** A text part of a user message. */
export interface WireTextPart {
  type: "text";
  text: string;
}

/** A tool call as the assistant message of a request carries it. */
export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A message of a Chat Completions request. */
export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | WireTextPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: WireToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A function the model may call. */
export interface WireTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The body of `POST /chat/completions` as this adapter sends it. */
export interface ChatCompletionsRequest {
  model: string;
  messages: WireMessage[];
  stream: true;
  /** Asks for a trailing chunk with the usage. */
  stream_options: { include_usage: true };
  tools?: WireTool[];
  max_tokens?: number;
  temperature?: number;
  /** The optional fields of `openai-options.ts`. */
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
  parallel_tool_calls?: boolean;
  reasoning_effort?: string;
  stop?: string | string[];
  seed?: number;
}

/** Per-model settings that shape the request. */
export interface WireRequestOptions extends ChatRequestOptions {
  model: string;
  maxTokens?: number;
  temperature?: number;
}

/** The canonical messages (and system prompt) as wire messages. */
export function toWireMessages(context: Context): WireMessage[] {
  // #region lab 5.3 toWireMessages
  const out: WireMessage[] = [];
  if (context.systemPrompt !== undefined && context.systemPrompt !== "") {
    out.push({ role: "system", content: context.systemPrompt });
  }
  for (const message of context.messages) {
    const wire = toWireMessage(message);
    if (wire !== undefined) out.push(wire);
  }
  return out;
  // #endregion
}

function toWireMessage(message: Message): WireMessage | undefined {
  // #region lab 5.3 toWireMessage
  switch (message.role) {
    case "user":
      if (message.content.length === 1) return { role: "user", content: message.content[0]!.text };
      return {
        role: "user",
        content: message.content.map((block) => ({ type: "text", text: block.text })),
      };
    case "assistant":
      return toWireAssistant(message);
    case "toolResult":
      return {
        role: "tool",
        tool_call_id: message.toolCallId,
        content: message.content.map((block) => block.text).join("\n"),
      };
  }
  // #endregion
}

function toWireAssistant(message: AssistantMessage): WireMessage | undefined {
  // #region lab 5.3 toWireAssistant
  if (message.stopReason === "error" || message.stopReason === "aborted") return undefined;
  const texts: string[] = [];
  const calls: WireToolCall[] = [];
  for (const block of message.content) {
    if (block.type === "text") texts.push(block.text);
    else if (block.type === "toolCall") calls.push(toWireToolCall(block));
  }
  if (texts.length === 0 && calls.length === 0) return undefined;
  const wire: WireMessage = { role: "assistant", content: texts.length > 0 ? texts.join("\n") : null };
  if (calls.length > 0) wire.tool_calls = calls;
  return wire;
  // #endregion
}

function toWireToolCall(call: ToolCall): WireToolCall {
  return {
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
  };
}

/** Tool definitions as wire functions (the JSON Schemas are copied). */
export function toWireTools(tools: readonly ToolDefinition[]): WireTool[] {
  // #region lab 5.3 toWireTools
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: structuredClone(tool.parameters),
    },
  }));
  // #endregion
}

/** The whole request body: streaming, with usage requested. */
export function toChatCompletionsRequest(
  context: Context,
  options: WireRequestOptions,
): ChatCompletionsRequest {
  // #region lab 5.3 toChatCompletionsRequest
  const request: ChatCompletionsRequest = {
    model: options.model,
    messages: toWireMessages(context),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (context.tools !== undefined && context.tools.length > 0) request.tools = toWireTools(context.tools);
  if (options.maxTokens !== undefined) request.max_tokens = options.maxTokens;
  if (options.temperature !== undefined) request.temperature = options.temperature;
  return applyRequestOptions(request, context, options);
  // #endregion
}

// ---------------------------------------------------------------------------------------------
// Inbound: the shape of one streamed chunk (every field optional: servers differ)
// ---------------------------------------------------------------------------------------------

/** A tool-call fragment inside a chunk's delta. */
export interface WireToolCallDelta {
  /** Which call this fragment belongs to; fragments of different calls may interleave. */
  index?: number;
  /** Sent once (some servers repeat it, or send `""` later: never overwrite a real id). */
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: string | null };
}

/** One `data:` chunk of a streamed response. */
export interface ChatCompletionChunk {
  choices?: Array<{
    index?: number;
    delta?: {
      content?: string | null;
      refusal?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: WireToolCallDelta[] | null;
    } | null;
    finish_reason?: string | null;
  }> | null;
  usage?: WireUsage | null;
  /** Groq also reports usage here. */
  x_groq?: { usage?: WireUsage | null } | null;
  /** An error reported inside the stream. */
  error?: { message?: string; code?: unknown; type?: string } | null;
}

/** Token counts as servers report them. */
export interface WireUsage {
  /** All prompt tokens, cached ones included. */
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  /** `cached_tokens`: read from the prompt cache (OpenAI, xAI, DeepSeek, OpenRouter…); `cache_write_tokens`: written to it (OpenRouter). */
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
}
