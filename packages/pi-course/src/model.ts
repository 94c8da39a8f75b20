/**
 * The `Model` contract (chapter 03): anything that can play one assistant turn as a stream of
 * `ModelEvent`s. Apart from `types.ts` because it names the stream class of `event-stream.ts`,
 * which itself reads the vocabulary: keeping it here keeps `types.ts` free of imports.
 */
import type { AssistantMessageEventStream } from "./event-stream.js";
import type { Context } from "./types.js";

/**
 * How much the model should think before it answers. Each provider maps it onto its
 * own wire: OpenAI-compatible servers get `reasoning_effort` (`off` sends none), Anthropic gets
 * `thinking` with a token budget (`off` sends none) and `max_tokens` raised to fit it.
 */
export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high";

/** The levels in order, from none to the most. */
export const THINKING_LEVELS: readonly ThinkingLevel[] = ["off", "minimal", "low", "medium", "high"];

/** Per-call options of `Model.stream`. */
export interface StreamOptions {
  /** Aborting ends the turn with an `error` event whose reason is `aborted`. */
  signal?: AbortSignal;
  /** The thinking level of this turn; absent: the model's own default (nothing is sent). */
  thinking?: ThinkingLevel;
  /**
   * How many times this request may be retried before its first byte, overriding the model's own
   * `maxRetries` (a model over HTTP; others ignore it). A fallback asks for 0 on every model but
   * its last, so that it moves on at once instead of waiting out a `Retry-After` first.
   */
  maxRetries?: number;
}

/** Anything that can play one assistant turn. */
export interface Model {
  /** Who serves it, copied to `AssistantMessage.provider`. */
  provider: string;
  /** The model id, copied to `AssistantMessage.model`. */
  id: string;
  /**
   * Contract: returns at once and never throws, nor returns a rejected promise. Every failure,
   * an abort before the first byte included, is an `error` event carrying a final message with
   * `errorMessage`.
   */
  stream(context: Context, options?: StreamOptions): AssistantMessageEventStream;
}
