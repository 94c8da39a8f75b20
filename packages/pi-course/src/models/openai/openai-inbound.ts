/**
 * Inbound translation: Chat Completions chunks → canonical model events for one turn.
 *
 * `ChatCompletionsTurn` (a `ProviderTurn`: the partial message, start / fail / done, the deltas)
 * maps each chunk onto the turn:
 * - `content` (and `refusal`) deltas → text blocks and `text_delta`;
 * - `reasoning_content` or `reasoning` deltas → thinking blocks and `thinking_delta`;
 * - tool-call fragments, kept apart per wire `index` (indices may interleave and need not start
 *   at 0), each call placed at the `contentIndex` where its index first appeared. Its text grows
 *   in `rawArguments`; each `toolcall_delta` carries `partialArguments`, the live best-effort
 *   value from a `PartialJsonParser` (the block's `arguments` stays `{}` until the end);
 * - `finish_reason` and `usage` are remembered; the turn ends at `[DONE]` or the end of the body
 *   (servers send usage, and sometimes errors, after the finish reason).
 *
 * Refusals: `delta.refusal` text is surfaced as ordinary text (a refusal is an answer the user
 * should read, and the run may go on), and a diagnostic on the message says it was a refusal.
 *
 * At the end, in this order: no finish reason at all → `fail("error", "The stream ended before
 * the model finished (no finish_reason was sent).")` (nothing else is added); then, when the
 * server sent no usage, the diagnostic `NO_USAGE_DIAGNOSTIC` (below) goes on the message first;
 * then `length` → `done(length)` with `rawArguments` kept and no `toolcall_end`; `tool_calls` →
 * one strict parse per call (`arguments`, or `argumentsError` when the text is not a JSON object),
 * `toolcall_end` per call in content order, `done(toolUse)`; `stop` WITH tool calls is treated
 * the same (`done(toolUse)`, some servers say `stop` after calls) after the diagnostic
 * `finish_reason was "stop" but the message has tool calls; treated as "tool_calls".`; `stop`
 * without calls → `done(stop)`; anything else → `fail("error", 'The provider ended the turn
 * with finish_reason "${reason}".', { kind: "provider", code: reason, retryable: false })`.
 */
import type { ChatCompletionChunk, WireToolCallDelta, WireUsage } from "./openai-wire.js";
import { FrameTemplate, type FrameSlot } from "../http/frame-template.js";
import { PartialJsonParser } from "../http/partial-json.js";
import { ProviderTurn } from "../http/provider-turn.js";
import { describeWireError } from "../http/request-failure.js";
import type { TextContent, ThinkingContent, ToolCall } from "../../types.js";

/** A streaming tool call: its block, where it sits, and its argument parser. */
interface OpenCall {
  block: ToolCall;
  contentIndex: number;
  parser: PartialJsonParser;
}

/** The diagnostic put on a finished message when the server reported no usage. */
export const NO_USAGE_DIAGNOSTIC =
  "The server sent no usage; usage is the explicit default (all zero), not an estimate.";

/** The diagnostic put on a message whose text is a refusal. */
export const REFUSAL_DIAGNOSTIC = "The model refused: its refusal is the text of this message.";

export class ChatCompletionsTurn extends ProviderTurn {
  /** Reads this stream's chunks: the repeated delta chunks without `JSON.parse`. */
  readonly frames = new FrameTemplate(deltaSlot);
  private readonly calls = new Map<number, OpenCall>();
  /** The block that text / thinking deltas currently extend, if it is still the last one. */
  private openText: TextContent | undefined = undefined;
  private openThinking: ThinkingContent | undefined = undefined;
  private finishReason: string | undefined = undefined;
  private sawUsage = false;
  private sawRefusal = false;

  /**
   * Applies one chunk. Returns the provider's error message when the chunk reports an error
   * (its usage is applied first); the caller then ends the turn with `fail`.
   */
  chunk(chunk: ChatCompletionChunk): string | undefined {
    // #region lab 5.4 ChatCompletionsTurn.chunk
    if (chunk === null || typeof chunk !== "object") return "The server sent a chunk that is not a JSON object.";
    const usage = chunk.usage ?? chunk.x_groq?.usage;
    if (usage !== null && usage !== undefined && typeof usage === "object") this.applyUsage(usage);
    if (chunk.error !== null && chunk.error !== undefined) return describeWireError(chunk.error);
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (delta !== null && delta !== undefined) {
        const reasoning = delta.reasoning_content || delta.reasoning;
        if (typeof reasoning === "string" && reasoning !== "") this.thinking(reasoning);
        if (typeof delta.content === "string" && delta.content !== "") this.text(delta.content);
        if (typeof delta.refusal === "string" && delta.refusal !== "") {
          if (!this.sawRefusal) this.diagnose(REFUSAL_DIAGNOSTIC);
          this.sawRefusal = true;
          this.text(delta.refusal);
        }
        const fragments = delta.tool_calls ?? [];
        for (let k = 0; k < fragments.length; k++) this.toolCall(fragments[k]!, k);
      }
      if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
        this.finishReason ??= choice.finish_reason;
      }
    }
    return undefined;
    // #endregion
  }

  /** The body ended (`[DONE]` or end of stream): pushes the terminal event. */
  finish(): void {
    // #region lab 5.4 ChatCompletionsTurn.finish
    if (this.isEnded) return;
    const reason = this.finishReason;
    if (reason === undefined) {
      return this.fail("error", "The stream ended before the model finished (no finish_reason was sent).");
    }
    if (!this.sawUsage) this.diagnose(NO_USAGE_DIAGNOSTIC);
    if (reason === "length") return this.done("length");
    if (reason === "tool_calls" || (reason === "stop" && this.calls.size > 0)) {
      if (reason === "stop") {
        this.diagnose('finish_reason was "stop" but the message has tool calls; treated as "tool_calls".');
      }
      this.endToolCalls();
      return this.done("toolUse");
    }
    if (reason === "stop") return this.done("stop");
    this.fail("error", `The provider ended the turn with finish_reason "${reason}".`, {
      kind: "provider",
      code: reason,
      retryable: false,
    });
    // #endregion
  }

  private text(delta: string): void {
    let block = this.openText;
    if (block === undefined || this.partial.content[this.partial.content.length - 1] !== block) {
      block = { type: "text", text: "" };
      this.partial.content.push(block);
      this.openText = block;
    }
    this.pushText(block, this.partial.content.length - 1, delta);
  }

  private thinking(delta: string): void {
    let block = this.openThinking;
    if (block === undefined || this.partial.content[this.partial.content.length - 1] !== block) {
      block = { type: "thinking", thinking: "" };
      this.partial.content.push(block);
      this.openThinking = block;
    }
    this.pushThinking(block, this.partial.content.length - 1, delta);
  }

  private toolCall(fragment: WireToolCallDelta, position: number): void {
    // #region lab 5.4 ChatCompletionsTurn.toolCall
    const index = typeof fragment.index === "number" ? fragment.index : position;
    let call = this.calls.get(index);
    if (call === undefined) {
      const block: ToolCall = { type: "toolCall", id: "", name: "", arguments: {}, rawArguments: "" };
      call = { block, contentIndex: this.partial.content.length, parser: new PartialJsonParser() };
      this.partial.content.push(block);
      this.calls.set(index, call);
    }
    const { block } = call;
    // A real id or name is set once; later `""` (or repeats) never overwrite it.
    if (block.id === "" && typeof fragment.id === "string") block.id = fragment.id;
    const name = fragment.function?.name;
    if (block.name === "" && typeof name === "string") block.name = name;
    const delta = fragment.function?.arguments;
    if (typeof delta !== "string" || delta === "") return;
    this.pushArguments(block, call.contentIndex, call.parser, delta);
    // #endregion
  }

  /** One strict parse per call, then `toolcall_end` per call in content order. */
  private endToolCalls(): void {
    // #region lab 5.4 ChatCompletionsTurn.endToolCalls
    const calls = [...this.calls.values()].sort((a, b) => a.contentIndex - b.contentIndex);
    for (const { block, contentIndex } of calls) this.endToolCall(block, contentIndex, `call_${contentIndex}`);
    // #endregion
  }

  private applyUsage(usage: WireUsage): void {
    const input = finite(usage.prompt_tokens);
    const output = finite(usage.completion_tokens);
    if (input === undefined && output === undefined) return;
    this.sawUsage = true;
    const total = finite(usage.total_tokens) ?? (input ?? 0) + (output ?? 0);
    this.partial.usage = { input: input ?? 0, output: output ?? 0, totalTokens: total };
    // Parts of `input` (OpenAI's prompt_tokens counts cached tokens), as the server reports them.
    const details = usage.prompt_tokens_details;
    const cacheRead = finite(details?.cached_tokens);
    const cacheWrite = finite(details?.cache_write_tokens);
    if (cacheRead !== undefined) this.partial.usage.cacheRead = cacheRead;
    if (cacheWrite !== undefined) this.partial.usage.cacheWrite = cacheWrite;
  }
}

function finite(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

const DELTA_KEYS = ["content", "reasoning_content", "reasoning", "refusal"] as const;

/** The delta string of a chunk: the first non-empty text field, or a tool call's arguments. */
function deltaSlot(value: unknown): FrameSlot | undefined {
  const delta = (value as ChatCompletionChunk | null)?.choices?.[0]?.delta as
    | Record<string, unknown>
    | null
    | undefined;
  if (delta === null || typeof delta !== "object") return undefined;
  for (const key of DELTA_KEYS) {
    const text = delta[key];
    if (typeof text === "string" && text !== "") return { holder: delta, key };
  }
  const fn = (delta as { tool_calls?: { function?: Record<string, unknown> }[] }).tool_calls?.[0]?.function;
  if (fn !== null && typeof fn === "object" && typeof fn.arguments === "string")
    return { holder: fn, key: "arguments" };
  return undefined;
}
