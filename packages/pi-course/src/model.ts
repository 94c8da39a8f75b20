/**
 * The `Model` contract (chapter 03): anything that can play one assistant turn as a stream of
 * `ModelEvent`s. Apart from `types.ts` because it names the stream class of `event-stream.ts`,
 * which itself reads the vocabulary: keeping it here keeps `types.ts` free of imports.
 */
import type { AssistantMessageEventStream } from "./event-stream.js";
import type { Context } from "./types.js";

/** Per-call options of `Model.stream`. */
export interface StreamOptions {
  /** Aborting ends the turn with an `error` event whose reason is `aborted`. */
  signal?: AbortSignal;
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
