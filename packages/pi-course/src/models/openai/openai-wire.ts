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
 * - a tool result becomes a `tool` message with its text blocks joined with `"\n"`;
 * - images (checked first by `checkImage`) go in a user message as `image_url` parts holding a
 *   `data:` URL. A `tool` message carries text only, so a tool result's images follow the run of
 *   tool messages they belong to, in one user message: per result, a text part naming the call,
 *   then its images; the tool message itself says how many images were moved there.
 */
import { checkImage, type InputOptions } from "../http/image-content.js";
import { applyRequestOptions, type ChatRequestOptions, type WireOptionalFields } from "./openai-options.js";
import type {
  AssistantMessage,
  Context,
  Message,
  ToolCall,
  ToolDefinition,
  ToolResultMessage,
  UserContent,
} from "../../types.js";

/** A text part of a user message. */
export interface WireTextPart {
  type: "text";
  text: string;
}

/** An image part of a user message: the image inline, as a `data:` URL. */
export interface WireImagePart {
  type: "image_url";
  image_url: { url: string };
}

/** A part of a user message. */
export type WireUserPart = WireTextPart | WireImagePart;

/** A tool call as the assistant message of a request carries it. */
export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A message of a Chat Completions request. */
export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | WireUserPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: WireToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A function the model may call. */
export interface WireTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The body of `POST /chat/completions` as this adapter sends it (with the optional `WireOptionalFields`). */
export interface ChatCompletionsRequest extends WireOptionalFields {
  model: string;
  messages: WireMessage[];
  stream: true;
  /** Asks for a trailing chunk with the usage. */
  stream_options: { include_usage: true };
  tools?: WireTool[];
  max_tokens?: number;
  temperature?: number;
}

/** Per-model settings that shape the request. */
export interface WireRequestOptions extends ChatRequestOptions, InputOptions {
  model: string;
  maxTokens?: number;
  temperature?: number;
}

/**
 * The canonical messages (and system prompt) as wire messages. Throws a `TypeError` saying what
 * to do when an image cannot be sent (see `checkImage`).
 */
export function toWireMessages(context: Context, options: InputOptions = {}): WireMessage[] {
  // #region lab 5.3 toWireMessages
  const out: WireMessage[] = [];
  if (context.systemPrompt !== undefined && context.systemPrompt !== "") {
    out.push({ role: "system", content: context.systemPrompt });
  }
  // The images of the tool results just sent: they follow the run of tool messages.
  let images: WireUserPart[] = [];
  context.messages.forEach((message, i) => {
    const where = `context.messages[${i}] (${message.role})`;
    if (message.role !== "toolResult" && images.length > 0) {
      out.push({ role: "user", content: images });
      images = [];
    }
    const wire = toWireMessage(message, where, options);
    if (wire !== undefined) out.push(wire);
    if (message.role === "toolResult") images.push(...toolResultImages(message, where, options));
  });
  if (images.length > 0) out.push({ role: "user", content: images });
  return out;
  // #endregion
}

function toWireMessage(message: Message, where: string, options: InputOptions): WireMessage | undefined {
  // #region lab 5.3 toWireMessage
  switch (message.role) {
    case "user": {
      const parts = message.content.map((block) => toWirePart(block, where, options));
      const only = parts.length === 1 ? parts[0]! : undefined;
      return { role: "user", content: only?.type === "text" ? only.text : parts };
    }
    case "assistant":
      return toWireAssistant(message);
    case "toolResult": {
      const texts = message.content.flatMap((block) => (block.type === "text" ? [block.text] : []));
      const images = message.content.length - texts.length;
      if (images > 0)
        texts.push(`[${images} image${images === 1 ? "" : "s"} of this result: in the next user message]`);
      return { role: "tool", tool_call_id: message.toolCallId, content: texts.join("\n") };
    }
  }
  // #endregion
}

function toWirePart(block: UserContent, where: string, options: InputOptions): WireUserPart {
  if (block.type === "text") return { type: "text", text: block.text };
  const image = checkImage(block, where, options);
  return { type: "image_url", image_url: { url: `data:${image.mimeType};base64,${image.data}` } };
}

/** A tool result's images as user-message parts, after a text part naming the call; none without images. */
function toolResultImages(message: ToolResultMessage, where: string, options: InputOptions): WireUserPart[] {
  const images = message.content
    .filter((block) => block.type === "image")
    .map((block) => toWirePart(block, where, options));
  if (images.length === 0) return [];
  return [
    { type: "text", text: `Images from the ${message.toolName} result (call ${message.toolCallId}):` },
    ...images,
  ];
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
export function toChatCompletionsRequest(context: Context, options: WireRequestOptions): ChatCompletionsRequest {
  // #region lab 5.3 toChatCompletionsRequest
  const request: ChatCompletionsRequest = {
    model: options.model,
    messages: toWireMessages(context, options),
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
