/**
 * Anthropic Messages on the wire: the request body (outbound translation of a canonical
 * `Context`) and the shapes of the streamed events (read by `anthropic-inbound.ts`).
 *
 * Outbound, in brief:
 * - the system prompt goes in `system`, not among the messages;
 * - tool results become `tool_result` blocks in a **user** message (Anthropic has no tool role);
 *   consecutive user-side messages (tool results, then perhaps a user message) are merged into
 *   one, results first, so roles alternate as the API requires;
 * - assistant thinking is sent back only when it carries a signature (Anthropic's own, replayed
 *   byte for byte); redacted thinking goes back as `redacted_thinking` with its opaque data;
 *   reasoning without a signature (another provider's) is dropped: the API would refuse it;
 * - error and aborted assistant messages are not part of the conversation (their calls were never
 *   answered) and are left out, as on the Chat Completions wire;
 * - tool-call ids are made safe for Anthropic (`[A-Za-z0-9_-]`, at most 64 characters), the same
 *   way in `tool_use` and in the matching `tool_result`, so a transcript recorded with another
 *   provider continues here;
 * - images (checked first by `checkImage`) become `image` blocks with a base64 source, in user
 *   messages and inside `tool_result` content alike.
 * Pure: the context is never changed, and nothing of it is shared with the request.
 */
import { checkImage, type InputOptions } from "../http/image-content.js";
import type { AssistantMessage, Context, Message, ToolDefinition, UserContent } from "../../types.js";

/** The API version sent as `anthropic-version`. */
export const ANTHROPIC_VERSION = "2023-06-01";

export interface AnthropicTextBlock {
  type: "text";
  text: string;
}

export interface AnthropicImageBlock {
  type: "image";
  source: { type: "base64"; media_type: string; data: string };
}

/** What a user message or a tool result carries besides tool results. */
export type AnthropicUserBlock = AnthropicTextBlock | AnthropicImageBlock;

export type AnthropicAssistantBlock =
  | AnthropicTextBlock
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: unknown };

export interface AnthropicToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: AnthropicUserBlock[];
  is_error?: true;
}

export type AnthropicWireMessage =
  | { role: "user"; content: Array<AnthropicUserBlock | AnthropicToolResultBlock> }
  | { role: "assistant"; content: AnthropicAssistantBlock[] };

export interface AnthropicWireTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicWireMessage[];
  stream: true;
  system?: string;
  tools?: AnthropicWireTool[];
  thinking?: { type: "enabled"; budget_tokens: number };
  temperature?: number;
}

/** What the request needs beyond the context. */
export interface AnthropicRequestOptions extends InputOptions {
  model: string;
  /** Required by the API: the most output tokens of one turn. */
  maxTokens: number;
  /** Extended thinking with this budget (tokens; the API wants at least 1024, below `maxTokens`). */
  thinking?: { budgetTokens: number };
  temperature?: number;
}

/** The request body for one streamed turn. */
export function toAnthropicRequest(context: Context, options: AnthropicRequestOptions): AnthropicRequest {
  const request: AnthropicRequest = {
    model: options.model,
    max_tokens: options.maxTokens,
    messages: toAnthropicMessages(context.messages, options),
    stream: true,
  };
  if (context.systemPrompt !== undefined && context.systemPrompt !== "") request.system = context.systemPrompt;
  if (context.tools !== undefined && context.tools.length > 0) request.tools = toAnthropicTools(context.tools);
  if (options.thinking !== undefined) {
    request.thinking = { type: "enabled", budget_tokens: options.thinking.budgetTokens };
  }
  if (options.temperature !== undefined) request.temperature = options.temperature;
  return request;
}

/**
 * Canonical messages → Anthropic messages (user-side messages merged, failed turns left out).
 * Throws a `TypeError` saying what to do when an image cannot be sent (see `checkImage`).
 */
export function toAnthropicMessages(messages: readonly Message[], options: InputOptions = {}): AnthropicWireMessage[] {
  // #region lab 5.6 toAnthropicMessages
  const out: AnthropicWireMessage[] = [];
  for (const [i, message] of messages.entries()) {
    if (message.role === "assistant") {
      const content = toAssistantBlocks(message);
      if (content.length > 0) out.push({ role: "assistant", content });
      continue;
    }
    const where = `context.messages[${i}] (${message.role})`;
    const blocks: Array<AnthropicUserBlock | AnthropicToolResultBlock> =
      message.role === "user"
        ? userBlocks(message.content, where, options)
        : [
            {
              type: "tool_result",
              tool_use_id: safeToolId(message.toolCallId),
              content: userBlocks(message.content, where, options),
              ...(message.isError && { is_error: true as const }),
            },
          ];
    if (blocks.length === 0) continue;
    const last = out[out.length - 1];
    if (last?.role === "user") {
      // Tool results must open the user message that follows the calls; text and images go after them.
      const results = [...last.content, ...blocks].filter((b) => b.type === "tool_result");
      const texts = [...last.content, ...blocks].filter((b) => b.type !== "tool_result");
      last.content = [...results, ...texts];
    } else {
      out.push({ role: "user", content: blocks });
    }
  }
  return out;
  // #endregion
}

function toAssistantBlocks(message: AssistantMessage): AnthropicAssistantBlock[] {
  if (message.stopReason === "error" || message.stopReason === "aborted") return [];
  const blocks: AnthropicAssistantBlock[] = [];
  for (const block of message.content) {
    switch (block.type) {
      case "text":
        // The API refuses empty text blocks.
        if (block.text !== "") blocks.push({ type: "text", text: block.text });
        break;
      case "thinking":
        if (block.redacted === true && block.signature !== undefined) {
          blocks.push({ type: "redacted_thinking", data: block.signature });
        } else if (block.signature !== undefined && block.signature !== "") {
          blocks.push({ type: "thinking", thinking: block.thinking, signature: block.signature });
        }
        break;
      case "toolCall":
        blocks.push({
          type: "tool_use",
          id: safeToolId(block.id),
          name: block.name,
          input: structuredClone(isObject(block.arguments) ? block.arguments : {}),
        });
        break;
    }
  }
  return blocks;
}

/** Canonical tool definitions → Anthropic tools (the JSON Schema copied, never shared). */
export function toAnthropicTools(tools: readonly ToolDefinition[]): AnthropicWireTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: structuredClone(tool.parameters),
  }));
}

/**
 * A tool-call id Anthropic accepts: characters outside `[A-Za-z0-9_-]` become `_`, and at most
 * 64 characters are kept. The same id always maps to the same safe id.
 */
export function safeToolId(id: string): string {
  const safe = id.replace(/[^A-Za-z0-9_-]/g, "_");
  return safe.length > 64 ? safe.slice(0, 64) : safe === "" ? "_" : safe;
}

/** Text (the API refuses empty text blocks) and images. */
function userBlocks(content: readonly UserContent[], where: string, options: InputOptions): AnthropicUserBlock[] {
  const blocks: AnthropicUserBlock[] = [];
  for (const block of content) {
    if (block.type === "image") {
      const { mimeType, data } = checkImage(block, where, options);
      blocks.push({ type: "image", source: { type: "base64", media_type: mimeType, data } });
    } else if (block.text !== "") {
      blocks.push({ type: "text", text: block.text });
    }
  }
  return blocks;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Inbound: the streamed events (every field optional: proxies differ)
// ---------------------------------------------------------------------------------------------

export interface AnthropicWireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

export interface AnthropicStreamEvent {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: AnthropicWireUsage | null };
  content_block?: {
    type?: string;
    text?: string;
    thinking?: string;
    signature?: string;
    data?: string;
    id?: string;
    name?: string;
    input?: unknown;
  };
  delta?: {
    type?: string;
    text?: string;
    thinking?: string;
    signature?: string;
    partial_json?: string;
    stop_reason?: string | null;
    stop_sequence?: string | null;
    stop_details?: { explanation?: string } | null;
  };
  usage?: AnthropicWireUsage | null;
  error?: { type?: string; message?: string } | null;
}
