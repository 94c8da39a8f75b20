/**
 * Inbound translation: Anthropic Messages stream events → canonical model events for one turn.
 *
 * `AnthropicTurn` (a `ProviderTurn`: the partial message, start / fail / done, the deltas) maps
 * each stream event onto the turn:
 * - `message_start` gives the input usage (so an aborted turn still counts its prompt);
 * - `content_block_start` opens a block at the wire `index` (blocks are tracked by index, as
 *   they may interleave): `text` → a text block, `thinking` → a thinking block whose
 *   `signature_delta` is kept on it for replay, `redacted_thinking` → a redacted thinking block
 *   holding the opaque data, `tool_use` → a tool call whose `input_json_delta` text grows in
 *   `rawArguments` and is read live by a `PartialJsonParser` (`partialArguments` on each
 *   `toolcall_delta`; the block's `arguments` stays `{}` until the end);
 * - server tools (`server_tool_use`, `*_tool_result`) and citations are not canonical content:
 *   they are not kept, and a diagnostic on the message says what was left out;
 * - `message_delta` gives the stop reason and the cumulative usage (only fields present
 *   overwrite); `ping` is ignored; unknown event types are noted once as a diagnostic.
 * At `message_stop` (or the end of the body): `tool_use` → one strict parse per call
 * (`arguments`, or `argumentsError` when the text is not a JSON object; empty text is `{}`),
 * `toolcall_end` per call in content order, `done(toolUse)`; `end_turn` and `stop_sequence` →
 * `done(stop)`, but WITH tool calls → the same as `tool_use` after the diagnostic
 * `stop_reason was "${reason}" but the message has tool calls; treated as "tool_use".`;
 * `pause_turn` → `done(stop)` after the diagnostic `stop_reason "pause_turn": the server paused a
 * long-running turn; send the conversation back to let it go on.`; `max_tokens` and `model_context_window_exceeded` → `done(length)` with the
 * calls' `rawArguments` kept and no `toolcall_end`; `refusal` → `error` naming the refusal (the
 * answer was cut off by the provider's classifier; the partial text is kept); anything else, or
 * no stop reason at all, → an `error` event naming it.
 *
 * Usage: `input` is every prompt token, cached or not (`input_tokens` + cache reads + cache
 * writes, since Anthropic's `input_tokens` leaves the cached ones out), with `cacheRead` and
 * `cacheWrite` the cached parts; `totalTokens` is `input + output`.
 */
import type { AnthropicStreamEvent, AnthropicWireUsage } from "./anthropic-wire.js";
import { FrameTemplate, type FrameSlot } from "../http/frame-template.js";
import { PartialJsonParser } from "../http/partial-json.js";
import { ProviderTurn } from "../http/provider-turn.js";
import type { TextContent, ThinkingContent, ToolCall } from "../../types.js";

type OpenBlock =
  | { kind: "text"; block: TextContent; contentIndex: number }
  | { kind: "thinking"; block: ThinkingContent; contentIndex: number }
  | { kind: "toolCall"; block: ToolCall; contentIndex: number; parser: PartialJsonParser }
  | { kind: "skipped" };

export class AnthropicTurn extends ProviderTurn {
  /** Reads this stream's events: the repeated delta frames without `JSON.parse`. */
  readonly frames = new FrameTemplate(deltaSlot);
  private readonly blocks = new Map<number, OpenBlock>();
  private readonly calls: { block: ToolCall; contentIndex: number }[] = [];
  private readonly wireUsage: Required<{ [K in keyof AnthropicWireUsage]: number }> = {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  };
  private readonly noted = new Set<string>();
  private stopReason: string | undefined = undefined;
  private refusal: string | undefined = undefined;

  /**
   * Applies one event. Returns the provider's error message for an `error` event; the caller
   * then ends the turn with `fail`. At `message_stop` the turn ends (`isEnded`).
   */
  event(event: AnthropicStreamEvent): string | undefined {
    // #region lab 5.6 AnthropicTurn.event
    if (event === null || typeof event !== "object") return "The server sent an event that is not a JSON object.";
    switch (event.type) {
      case "message_start":
        if (event.message?.usage) this.applyUsage(event.message.usage);
        return undefined;
      case "content_block_start":
        this.open(event);
        return undefined;
      case "content_block_delta":
        this.delta(event);
        return undefined;
      case "content_block_stop":
      case "ping":
        return undefined;
      case "message_delta": {
        if (event.usage) this.applyUsage(event.usage);
        const reason = event.delta?.stop_reason;
        if (typeof reason === "string" && reason !== "") this.stopReason = reason;
        const explanation = event.delta?.stop_details?.explanation;
        if (typeof explanation === "string") this.refusal = explanation;
        return undefined;
      }
      case "message_stop":
        this.finish();
        return undefined;
      case "error":
        return describeAnthropicError(event.error);
      default:
        this.note(`unknown:${String(event.type)}`, `Ignored an event of unknown type ${JSON.stringify(event.type)}.`);
        return undefined;
    }
    // #endregion
  }

  /** The turn is over (`message_stop`, or the body ended): pushes the terminal event. */
  finish(): void {
    // #region lab 5.6 AnthropicTurn.finish
    if (this.isEnded) return;
    const reason = this.stopReason;
    switch (reason) {
      case undefined:
        return this.fail("error", "The stream ended before the model finished (no stop_reason was sent).");
      case "tool_use":
        this.endToolCalls();
        return this.done("toolUse");
      case "pause_turn":
        this.diagnose(
          'stop_reason "pause_turn": the server paused a long-running turn; send the conversation back to let it go on.',
        );
        return this.done("stop");
      case "end_turn":
      case "stop_sequence":
        if (this.calls.length > 0) {
          this.diagnose(`stop_reason was "${reason}" but the message has tool calls; treated as "tool_use".`);
          this.endToolCalls();
          return this.done("toolUse");
        }
        return this.done("stop");
      case "max_tokens":
      case "model_context_window_exceeded":
        return this.done("length");
      case "refusal":
        return this.fail(
          "error",
          `The model refused to go on (stop_reason "refusal")${this.refusal ? `: ${this.refusal}` : "."}`,
          { kind: "provider", code: reason, retryable: false },
        );
      default:
        return this.fail("error", `The provider ended the turn with stop_reason "${reason}".`, {
          kind: "provider",
          code: reason,
          retryable: false,
        });
    }
    // #endregion
  }

  private open(event: AnthropicStreamEvent): void {
    const index = typeof event.index === "number" ? event.index : this.blocks.size;
    const wire = event.content_block ?? {};
    const contentIndex = this.partial.content.length;
    switch (wire.type) {
      case "text": {
        const block: TextContent = { type: "text", text: "" };
        this.partial.content.push(block);
        this.blocks.set(index, { kind: "text", block, contentIndex });
        if (typeof wire.text === "string" && wire.text !== "") this.pushText(block, contentIndex, wire.text);
        return;
      }
      case "thinking": {
        const block: ThinkingContent = { type: "thinking", thinking: "" };
        if (typeof wire.signature === "string" && wire.signature !== "") block.signature = wire.signature;
        this.partial.content.push(block);
        this.blocks.set(index, { kind: "thinking", block, contentIndex });
        if (typeof wire.thinking === "string" && wire.thinking !== "")
          this.pushThinking(block, contentIndex, wire.thinking);
        return;
      }
      case "redacted_thinking": {
        const block: ThinkingContent = {
          type: "thinking",
          thinking: "",
          redacted: true,
          signature: String(wire.data ?? ""),
        };
        this.partial.content.push(block);
        this.blocks.set(index, { kind: "thinking", block, contentIndex });
        return;
      }
      case "tool_use": {
        const block: ToolCall = {
          type: "toolCall",
          id: typeof wire.id === "string" ? wire.id : "",
          name: typeof wire.name === "string" ? wire.name : "",
          arguments: {},
          rawArguments: "",
        };
        this.partial.content.push(block);
        this.blocks.set(index, { kind: "toolCall", block, contentIndex, parser: new PartialJsonParser() });
        this.calls.push({ block, contentIndex });
        return;
      }
      default: {
        this.blocks.set(index, { kind: "skipped" });
        const what =
          wire.type === "server_tool_use"
            ? `server tool ${JSON.stringify(wire.name)} (call ${wire.id})`
            : `a ${JSON.stringify(wire.type)} block`;
        this.diagnose(`Not kept: ${what}; it is the provider's own content, not canonical content.`);
      }
    }
  }

  private delta(event: AnthropicStreamEvent): void {
    const open = this.blocks.get(typeof event.index === "number" ? event.index : -1);
    const delta = event.delta ?? {};
    if (open === undefined || open.kind === "skipped") return;
    switch (delta.type) {
      case "text_delta":
        if (open.kind === "text" && typeof delta.text === "string" && delta.text !== "") {
          this.pushText(open.block, open.contentIndex, delta.text);
        }
        return;
      case "thinking_delta":
        if (open.kind === "thinking" && typeof delta.thinking === "string" && delta.thinking !== "") {
          this.pushThinking(open.block, open.contentIndex, delta.thinking);
        }
        return;
      case "signature_delta":
        if (open.kind === "thinking" && typeof delta.signature === "string") {
          open.block.signature = (open.block.signature ?? "") + delta.signature;
        }
        return;
      case "input_json_delta": {
        if (open.kind !== "toolCall" || typeof delta.partial_json !== "string" || delta.partial_json === "") return;
        this.pushArguments(open.block, open.contentIndex, open.parser, delta.partial_json);
        return;
      }
      case "citations_delta":
        this.note("citations", "Not kept: citations on the text (the text itself is kept).");
        return;
      default:
        this.note(`delta:${String(delta.type)}`, `Ignored a delta of unknown type ${JSON.stringify(delta.type)}.`);
    }
  }

  /** One strict parse per call, then `toolcall_end` per call in content order. */
  private endToolCalls(): void {
    for (const { block, contentIndex } of this.calls) this.endToolCall(block, contentIndex, `toolu_${contentIndex}`);
  }

  private applyUsage(usage: AnthropicWireUsage): void {
    for (const key of Object.keys(this.wireUsage) as (keyof AnthropicWireUsage)[]) {
      const value = usage[key];
      if (typeof value === "number" && Number.isFinite(value)) this.wireUsage[key] = value;
    }
    const u = this.wireUsage;
    const cacheRead = u.cache_read_input_tokens;
    const cacheWrite = u.cache_creation_input_tokens;
    const input = u.input_tokens + cacheRead + cacheWrite;
    this.partial.usage = {
      input,
      output: u.output_tokens,
      totalTokens: input + u.output_tokens,
      cacheRead,
      cacheWrite,
    };
  }

  private note(key: string, text: string): void {
    if (this.noted.has(key)) return;
    this.noted.add(key);
    this.diagnose(text);
  }
}

/** A readable message from an Anthropic error object (`{type, message}`). */
export function describeAnthropicError(error: unknown): string {
  if (error !== null && typeof error === "object") {
    const { type, message } = error as { type?: unknown; message?: unknown };
    const text = typeof message === "string" ? message : JSON.stringify(error);
    return typeof type === "string" && type !== "" ? `${text} (${type})` : text;
  }
  return typeof error === "string" ? error : "The provider reported an error without a message.";
}

const DELTA_KEYS = ["text", "thinking", "partial_json"] as const;

/** The delta string of a `content_block_delta` event. */
function deltaSlot(value: unknown): FrameSlot | undefined {
  const event = value as AnthropicStreamEvent | null;
  if (event?.type !== "content_block_delta") return undefined;
  const delta = event.delta as Record<string, unknown> | null | undefined;
  if (delta === null || typeof delta !== "object") return undefined;
  for (const key of DELTA_KEYS) if (typeof delta[key] === "string") return { holder: delta, key };
  return undefined;
}
