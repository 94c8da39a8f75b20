/**
 * `ScriptedModel`: a deterministic `Model` that plays scripted turns as model events.
 *
 * It is the course's test double and the embedded default model of the main job. Each call to
 * `stream()` plays the next turn: `start`, the content as deltas (text in `text_delta`s, each
 * tool call's JSON text in `toolcall_delta`s, then `toolcall_end`), then `done`. Failures,
 * scripted or not, are `error` events, never throws.
 *
 * The played message takes its content, usage, stopReason and errorMessage from the script, and
 * its provider, model and timestamp from this model (`provider`, `id`, `now`).
 */
import { AssistantMessageEventStream } from "../event-stream.js";
import { assistantMessage } from "../messages.js";
// #region ch05
import { PartialJsonParser } from "./http/partial-json.js";
// #endregion
// #region ch06
import { scriptedToolCallProblem } from "./scripted-tool-calls.js";
// #endregion
import type { AssistantMessage, Context, ModelEvent, StopReason, TextContent, ToolCall } from "../types.js";
import type { Model, StreamOptions } from "../model.js";

/** A scripted failure: played as an `error` event, after `partialText` if given. */
export interface ScriptedFailure {
  stopReason: "error" | "aborted";
  errorMessage: string;
  /** Text streamed before the failure; kept on the error message. */
  partialText?: string;
}

/** Computes a turn from the context the model was asked with. May be async; may throw. */
export type ScriptedResponder = (
  context: Context,
  turnIndex: number,
) => AssistantMessage | ScriptedFailure | Promise<AssistantMessage | ScriptedFailure>;

/** One scripted turn: a final message to play, a failure, or a responder. */
export type ScriptedTurn = AssistantMessage | ScriptedFailure | ScriptedResponder;

export interface ScriptedModelOptions {
  /** Defaults to `"scripted"`. */
  provider?: string;
  /** Defaults to `"scripted-model"`. */
  id?: string;
  /** Characters per delta (never splitting a surrogate pair). Defaults to 8. */
  chunkSize?: number;
  /** The clock for timestamps. Defaults to `Date.now`. */
  now?: () => number;
  /** Milliseconds to wait between events; 0 (default) yields one macrotask (`setImmediate`). */
  delayMs?: number;
  /**
   * Answers every call after the scripted turns (none: such a call ends with an error saying the
   * script has no turn N). Its `turnIndex` counts on from the scripted turns.
   */
  repeat?: ScriptedResponder;
  /**
   * How many of the latest requests `requests` keeps (default 100; `0`: none; `Infinity`: all).
   * Each is a copy of a context that grows with the run; the copies share what they have in
   * common (each message and tool definition is copied once, the first time it is sent), so they
   * cost about one transcript, not one per request.
   */
  keepRequests?: number;
  // #region ch06
  /**
   * Checks each scripted tool call against the tools the request declares (`context.tools`) when
   * its turn is played (default true): a call to an undeclared tool, or arguments the tool's
   * schema refuses, end that turn with an `error` event, nothing streamed, whose message names the
   * turn, the tool and what is wrong, e.g. `ScriptedModel: scripted turn 3: tool call "read"
   * arguments: /path must be string. …`. A request without tools is not checked. The check is
   * strict JSON Schema: it applies neither the loop's coercions (`"3"` for a number) nor a tool's
   * `prepareArguments`. Set `false` for a script that plays a wrong or loose call on purpose (to
   * test how the loop answers a model's mistake).
   */
  checkToolCalls?: boolean;
  // #endregion
}

export class ScriptedModel implements Model {
  readonly provider: string;
  readonly id: string;
  /**
   * Copies of the latest contexts the model was asked with (see `keepRequests`), oldest first,
   * as they were when sent. Read-only: they share their messages with each other.
   */
  readonly requests: Context[] = [];
  /** How many times `stream` was called. */
  calls = 0;
  private readonly keepRequests: number;
  private readonly turns: ScriptedTurn[];
  private readonly chunkSize: number;
  private readonly now: () => number;
  private readonly delayMs: number;
  private readonly repeat: ScriptedResponder | undefined;
  // #region ch06
  private readonly checkToolCalls: boolean;
  // #endregion
  /** Turns played so far: a call refused before it started (pre-aborted) does not use one up. */
  private played = 0;
  /** The copy of each message and tool definition already sent, shared by the kept requests. */
  private readonly copies = new WeakMap<object, unknown>();

  constructor(turns: readonly ScriptedTurn[], options: ScriptedModelOptions = {}) {
    const chunkSize = options.chunkSize ?? 8;
    if (!Number.isInteger(chunkSize) || chunkSize < 1) {
      throw new RangeError(`ScriptedModel: chunkSize must be a positive integer, got ${chunkSize}`);
    }
    this.turns = [...turns];
    this.provider = options.provider ?? "scripted";
    this.id = options.id ?? "scripted-model";
    this.chunkSize = chunkSize;
    this.now = options.now ?? Date.now;
    this.delayMs = options.delayMs ?? 0;
    const keep = options.keepRequests ?? 100;
    if (!(keep === Infinity || (Number.isInteger(keep) && keep >= 0))) {
      throw new RangeError(`ScriptedModel: keepRequests must be a whole number >= 0 or Infinity, got ${keep}`);
    }
    this.keepRequests = keep;
    if (options.repeat !== undefined && typeof options.repeat !== "function") {
      throw new TypeError("ScriptedModel: repeat must be a responder function (context, turnIndex) => turn");
    }
    this.repeat = options.repeat;
    // #region ch06
    this.checkToolCalls = options.checkToolCalls ?? true;
    // #endregion
  }

  /**
   * A model that answers every call with `responder` (a long run, a soak test, a default reply).
   * It keeps the latest 100 requests like any ScriptedModel; a soak that reads none passes
   * `keepRequests: 0`.
   */
  static repeat(responder: ScriptedResponder, options: Omit<ScriptedModelOptions, "repeat"> = {}): ScriptedModel {
    return new ScriptedModel([], { ...options, repeat: responder });
  }

  stream(context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
    // #region lab 4.1 stream
    const stream = new AssistantMessageEventStream();
    let snapshot: Context;
    let kept: Context | undefined;
    try {
      snapshot = structuredClone(context); // the player's own copy: a responder may change it
      if (this.keepRequests > 0) kept = this.keptCopy(context);
    } catch (error) {
      this.fail(stream, "error", `ScriptedModel: the context cannot be copied: ${describe(error)}`);
      return stream;
    }
    const call = ++this.calls;
    if (kept !== undefined) {
      this.requests.push(kept);
      if (this.requests.length > this.keepRequests) this.requests.shift();
    }
    // A bug in a script (say, a responder returning garbage) still ends the turn as an event.
    this.play(stream, snapshot, options.signal).catch((error) =>
      this.fail(stream, "error", `ScriptedModel: cannot play call ${call}: ${describe(error)}`),
    );
    return stream;
    // #endregion
  }

  /**
   * The copy of `context` that `requests` keeps: its messages and tool definitions are copied the
   * first time they are sent and shared by every later request that sends them again, so a long
   * run's kept requests hold one copy of its transcript. Throws what `structuredClone` throws.
   */
  private keptCopy(context: Context): Context {
    const shared = <T>(item: T): T => {
      if (typeof item !== "object" || item === null) return structuredClone(item);
      let copy = this.copies.get(item);
      if (copy === undefined) this.copies.set(item, (copy = structuredClone(item)));
      return copy as T;
    };
    const { messages, tools, ...rest } = context;
    return {
      ...structuredClone(rest),
      messages: messages.map(shared),
      ...(tools !== undefined && { tools: tools.map(shared) }),
    };
  }

  private async play(
    stream: AssistantMessageEventStream,
    context: Context,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (this.repeat !== undefined && this.played >= this.turns.length) this.turns.push(this.repeat);
    // #region ch06
    const turnNumber = this.played + 1; // resolveTurn counts the turn before its first await
    // #endregion
    const script = await this.resolveTurn(stream, context, signal);
    if (script === undefined) return;
    // #region ch06
    const wrong = this.checkToolCalls ? scriptedToolCallProblem(script, context, turnNumber) : undefined;
    if (wrong !== undefined) return void this.fail(stream, "error", wrong);
    // #endregion
    // #region lab 4.2 play
    const partial = this.blank("stop");
    stream.push({ type: "start", partial });
    for (const block of script.content) {
      const contentIndex = partial.content.length;
      // Each event waits its turn (see `interrupted`), and the partial changes only right before
      // its event is pushed: a prompt reader sees every partial as of its event.
      if (block.type === "text") {
        const target = { type: "text" as const, text: "" };
        for (const delta of pieces(block.text, this.chunkSize)) {
          if (await this.interrupted(signal)) return this.abort(stream, partial);
          if (partial.content.length === contentIndex) partial.content.push(target);
          target.text += delta;
          stream.push({ type: "text_delta", contentIndex, delta, partial });
        }
        // #region ch05
      } else if (block.type === "thinking") {
        const target = { type: "thinking" as const, thinking: "" };
        for (const delta of pieces(block.thinking, this.chunkSize)) {
          if (await this.interrupted(signal)) return this.abort(stream, partial);
          if (partial.content.length === contentIndex) partial.content.push(target);
          target.thinking += delta;
          stream.push({ type: "thinking_delta", contentIndex, delta, partial });
        }
        // #endregion
      } else if (
        block.type === "toolCall" &&
        !(await this.playToolCall(stream, partial, block, script.stopReason, signal))
      ) {
        return;
      }
    }
    if (await this.interrupted(signal)) return this.abort(stream, partial);
    partial.usage = { ...script.usage };
    partial.stopReason = script.stopReason;
    if (script.errorMessage !== undefined) partial.errorMessage = script.errorMessage;
    if (script.stopReason === "error" || script.stopReason === "aborted") {
      stream.push({ type: "error", reason: script.stopReason, error: partial });
    } else {
      stream.push({ type: "done", reason: script.stopReason, message: partial });
    }
    // #endregion
  }

  /**
   * Streams one tool call of the turn into `partial` (the next content index): its JSON text as
   * `toolcall_delta`s, the block holding `arguments: {}` and the text so far in `rawArguments`
   * (each delta also carries `partialArguments`, as the providers' do);
   * then, unless the turn is a truncated `length` turn, `toolcall_end` with the completed block
   * (the scripted arguments, deep-copied), the very object the final message holds. Returns
   * false when an abort ended the turn (its error event is pushed), true to go on.
   */
  private async playToolCall(
    stream: AssistantMessageEventStream,
    partial: AssistantMessage,
    block: ToolCall,
    stopReason: StopReason,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    // #region lab 4.3 playToolCall
    const contentIndex = partial.content.length;
    const target: ToolCall = { type: "toolCall", id: block.id, name: block.name, arguments: {} };
    target.rawArguments = "";
    const json = block.rawArguments ?? JSON.stringify(block.arguments ?? {});
    // #region ch05
    const live = livePartialArguments(json);
    // #endregion
    for (const delta of pieces(json, this.chunkSize)) {
      if (await this.interrupted(signal)) {
        this.abort(stream, partial);
        return false;
      }
      if (partial.content.length === contentIndex) partial.content.push(target);
      target.rawArguments += delta;
      const event: Extract<ModelEvent, { type: "toolcall_delta" }> = {
        type: "toolcall_delta",
        contentIndex,
        delta,
        partial,
      };
      // #region ch05
      live(event, target.rawArguments.length);
      // #endregion
      stream.push(event);
    }
    // A truncated (`length`) turn never completes its calls: no toolcall_end.
    if (stopReason === "length") return true;
    if (await this.interrupted(signal)) {
      this.abort(stream, partial);
      return false;
    }
    target.arguments = structuredClone(block.arguments);
    if (block.rawArguments === undefined) delete target.rawArguments;
    // #region ch05
    if (block.argumentsError !== undefined) target.argumentsError = block.argumentsError;
    // #endregion
    stream.push({ type: "toolcall_end", contentIndex, toolCall: target, partial });
    return true;
    // #endregion
  }

  /**
   * Takes the next turn of the script: a scripted message, a failure, or a responder's answer.
   * Ends the stream with an `error` event (and returns undefined) when the turn cannot be played;
   * a pre-aborted call ends before it takes a turn.
   */
  private async resolveTurn(
    stream: AssistantMessageEventStream,
    context: Context,
    signal: AbortSignal | undefined,
  ): Promise<AssistantMessage | undefined> {
    // #region lab 4.1 resolveTurn
    if (signal?.aborted) return this.fail(stream, "aborted", "Request was aborted");
    const turnIndex = this.played++;
    let turn = this.turns[turnIndex];
    if (turn === undefined) {
      const count = this.turns.length;
      return this.fail(
        stream,
        "error",
        `ScriptedModel: the script has no turn ${turnIndex + 1} (it has ${count}). ` +
          `Add a turn to the script, or stop the run sooner.`,
      );
    }
    if (typeof turn === "function") {
      try {
        turn = await turn(context, turnIndex);
      } catch (error) {
        return this.fail(stream, "error", `ScriptedModel: the responder threw: ${describe(error)}`);
      }
      if (signal?.aborted) return this.fail(stream, "aborted", "Request was aborted");
    }
    return "role" in turn ? turn : failureScript(turn);
    // #endregion
  }

  /**
   * Yields to the event loop (one macrotask, or `delayMs`), then tells whether the signal has
   * fired. A macrotask lets a prompt reader handle the previous event, and abort in response to
   * it, before the next one is made.
   */
  private async interrupted(signal: AbortSignal | undefined): Promise<boolean> {
    await new Promise((resolve) => (this.delayMs > 0 ? setTimeout(resolve, this.delayMs) : setImmediate(resolve)));
    return signal?.aborted === true;
  }

  /** Ends the turn as aborted, keeping what was streamed. */
  private abort(stream: AssistantMessageEventStream, partial: AssistantMessage): void {
    partial.stopReason = "aborted";
    partial.errorMessage = "Request was aborted";
    stream.push({ type: "error", reason: "aborted", error: partial });
  }

  private fail(stream: AssistantMessageEventStream, reason: "error" | "aborted", errorMessage: string): undefined {
    const error = this.blank(reason);
    error.errorMessage = errorMessage;
    stream.push({ type: "error", reason, error });
    return undefined;
  }

  /** An empty message of this model, stamped now. */
  private blank(stopReason: StopReason): AssistantMessage {
    return assistantMessage([], stopReason, { provider: this.provider, model: this.id, timestamp: this.now() });
  }
}

/** A scripted failure as a message to play: its partial text, then the error. */
function failureScript(failure: ScriptedFailure): AssistantMessage {
  const text = failure.partialText;
  const content: TextContent[] = text === undefined || text === "" ? [] : [{ type: "text", text }];
  return assistantMessage(content, failure.stopReason, { errorMessage: failure.errorMessage });
}

/** Splits text into pieces of `size` UTF-16 units, never between the halves of a surrogate pair. */
export function chunk(text: string, size: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

/** The deltas of one block: at least one, so that an empty block still appears. */
function pieces(text: string, size: number): string[] {
  const parts = chunk(text, size);
  return parts.length === 0 ? [""] : parts;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
// #region ch05

/**
 * Gives each `toolcall_delta` of one call its `partialArguments`, the same view the providers
 * give: the best-effort value of the text so far, from one `PartialJsonParser` (a live view that
 * keeps growing with later deltas). The block's own `arguments` stays `{}` until `toolcall_end`,
 * as in the providers. The value is read through a getter that feeds the parser up to that
 * delta's text when first asked, so playing a turn never needs the parser, and a consumer that
 * never reads it pays nothing. The getter is not enumerable: a spread or `JSON.stringify` of the
 * event leaves it out (read it by name).
 */
function livePartialArguments(
  json: string,
): (event: Extract<ModelEvent, { type: "toolcall_delta" }>, end: number) => void {
  let parser: PartialJsonParser | undefined;
  let fed = 0;
  const valueAt = (end: number): unknown => {
    parser ??= new PartialJsonParser();
    if (fed < end) {
      parser.push(json.slice(fed, end));
      fed = end;
    }
    return parser.value;
  };
  return (event, end) => {
    Object.defineProperty(event, "partialArguments", {
      get: () => valueAt(end),
      enumerable: false,
      configurable: true,
    });
  };
}
// #endregion
