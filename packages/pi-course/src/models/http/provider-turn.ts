/**
 * What every provider's turn translator shares: the partial message, the events that start and
 * end a turn, text / thinking / argument deltas, the end of a tool call, and diagnostics.
 *
 * A subclass (`ChatCompletionsTurn`, `AnthropicTurn`) maps its wire's events onto these and
 * decides how the turn ends (`finish`). The partial message is the same object in every event of
 * the turn; exactly one `done` or `error` is pushed, after which nothing more is.
 */
import type { AssistantMessageEventStream } from "../../event-stream.js";
import { parseToolArguments, type PartialJsonParser } from "./partial-json.js";
import { GrowingText } from "./growing-text.js";
import type {
  AssistantMessage,
  ErrorDetails,
  ModelEvent,
  TextContent,
  ThinkingContent,
  ToolCall,
} from "../../types.js";

/** Who makes the message of a turn, and when. */
export interface TurnMeta {
  provider: string;
  model: string;
  timestamp: number;
  /**
   * How many HTTP requests the turn took (`OpenStream.attempts`): copied to the message
   * (`AssistantMessage.attempts`) and, when the turn fails, to `errorDetails.attempts`.
   */
  attempts?: number;
}

export abstract class ProviderTurn {
  /** The message being built; the same object in every event of the turn. */
  readonly partial: AssistantMessage;
  private ended = false;
  /** The string field that deltas last grew (`text`, `thinking` or `rawArguments` of a block). See `grow`. */
  private growing: { block: object; key: string } | undefined = undefined;
  /** Its text (`growingText.text` is what `grow` last returned). */
  private readonly growingText = new GrowingText();

  constructor(
    protected readonly stream: AssistantMessageEventStream,
    meta: TurnMeta,
  ) {
    this.partial = {
      role: "assistant",
      content: [],
      provider: meta.provider,
      model: meta.model,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason: "stop",
      ...(meta.attempts !== undefined && { attempts: meta.attempts }),
      timestamp: meta.timestamp,
    };
  }

  /** Events pushed so far (see `progressMark`). */
  private emitted = 0;

  /**
   * Changes whenever a frame carried something: an event pushed (a delta, a block's end, the
   * terminal event), a block opened, usage reported. The adapter feeds the idle watchdog only
   * when it changes, so keep-alive frames (Anthropic's `ping`, OpenAI chunks with empty deltas)
   * are not progress and a server that sends only them ends as a stall.
   */
  get progressMark(): string {
    const { usage } = this.partial;
    return `${this.emitted}|${this.partial.content.length}|${usage.input}|${usage.output}|${usage.totalTokens}|${usage.cacheRead}|${usage.cacheWrite}`;
  }

  private emit(event: ModelEvent): void {
    this.emitted += 1;
    this.stream.push(event);
  }

  /**
   * Called once, just before the terminal event (`done` or `error`) is pushed, wherever the turn
   * ends (a failure, the wire's own end such as Anthropic's `message_stop`, or `finish`): the
   * adapter closes its request's deadline here, so a reader that sees the terminal event finds no
   * timer and no listener on its signal left behind.
   */
  beforeEnd: (() => void) | undefined = undefined;

  /** True once `done` or `error` was pushed. */
  get isEnded(): boolean {
    return this.ended;
  }

  start(): void {
    this.emit({ type: "start", partial: this.partial });
  }

  /** The body ended (or the wire said the turn is over): pushes the terminal event, once. */
  abstract finish(): void;

  /**
   * Ends the turn with an `error` event that keeps the partial content. Without `details`, an
   * `aborted` turn is of kind `aborted` and an `error` turn of kind `protocol`. The turn's
   * `attempts` (from `TurnMeta`) goes into the details when they do not say it themselves.
   */
  fail(reason: "error" | "aborted", errorMessage: string, details?: ErrorDetails): void {
    if (this.ended) return;
    this.ended = true;
    this.beforeEnd?.();
    this.partial.stopReason = reason;
    this.partial.errorMessage = errorMessage;
    const given = details ?? { kind: reason === "aborted" ? "aborted" : "protocol", retryable: false };
    const attempts = this.partial.attempts;
    this.partial.errorDetails = attempts === undefined || given.attempts !== undefined ? given : { ...given, attempts };
    this.emit({ type: "error", reason, error: this.partial });
  }

  protected done(reason: "stop" | "length" | "toolUse"): void {
    this.ended = true;
    this.beforeEnd?.();
    this.partial.stopReason = reason;
    this.emit({ type: "done", reason, message: this.partial });
  }

  /** Appends to a text block of the partial message, at `contentIndex`. */
  protected pushText(block: TextContent, contentIndex: number, delta: string): void {
    block.text = this.grow(block, "text", block.text, delta);
    this.emit({ type: "text_delta", contentIndex, delta, partial: this.partial });
  }

  /** Appends to a thinking block of the partial message, at `contentIndex`. */
  protected pushThinking(block: ThinkingContent, contentIndex: number, delta: string): void {
    block.thinking = this.grow(block, "thinking", block.thinking, delta);
    this.emit({ type: "thinking_delta", contentIndex, delta, partial: this.partial });
  }

  /** Appends argument text to a streaming tool call; the event carries the parser's live value. */
  protected pushArguments(block: ToolCall, contentIndex: number, parser: PartialJsonParser, delta: string): void {
    block.rawArguments = this.grow(block, "rawArguments", block.rawArguments ?? "", delta);
    parser.push(delta);
    this.emit({
      type: "toolcall_delta",
      contentIndex,
      delta,
      partial: this.partial,
      partialArguments: parser.value,
    });
  }

  /**
   * Ends one tool call: an id if the server sent none (`fallbackId`, with a diagnostic), one
   * strict parse (`arguments`, or `argumentsError` with `rawArguments` kept), then `toolcall_end`.
   */
  protected endToolCall(block: ToolCall, contentIndex: number, fallbackId: string): void {
    if (block.id === "") {
      block.id = fallbackId;
      this.diagnose(`The server sent no id for the tool call at content ${contentIndex}; using "${block.id}".`);
    }
    const parsed = parseToolArguments(block.rawArguments ?? "");
    block.arguments = parsed.arguments;
    if (parsed.error !== undefined) block.argumentsError = parsed.error;
    else delete block.rawArguments;
    this.emit({ type: "toolcall_end", contentIndex, toolCall: block, partial: this.partial });
  }

  /**
   * `current + delta`, grown as a `GrowingText` (growing-text.ts: not one string node per delta).
   * Deltas to another field (interleaved blocks), or to a field set by other code meanwhile,
   * start over from that field's current text.
   */
  private grow(block: object, key: string, current: string, delta: string): string {
    const g = this.growing;
    if (g === undefined || g.block !== block || g.key !== key || current !== this.growingText.text) {
      this.growing = { block, key };
      this.growingText.reset(current);
    }
    return this.growingText.add(delta);
  }

  /** A note on the message that is not an error (never sent back to a model). */
  protected diagnose(note: string): void {
    (this.partial.diagnostics ??= []).push(note);
  }
}
