/**
 * The vocabulary of @pi/course: content blocks, canonical messages, the context a model
 * receives, model events, and (from chapter 06 on) the tool contract.
 *
 * Everything a transcript stores is plain JSON-serialisable data. Provider wire formats and
 * UI text are other layers; only these shapes are stored and replayed.
 *
 * Contract of this file: it imports no file of the library (only types from typebox), so every
 * layer may import it and it depends on none. The `Model` contract, which names the stream class,
 * is in `model.ts`; the loop's and the Agent's types are in `agent/types.ts`, the session's in
 * `session/types.ts`.
 */
import type { Static, TSchema } from "typebox";

// ---------------------------------------------------------------------------------------------
// Content blocks
// ---------------------------------------------------------------------------------------------

/** A block of plain text. */
export interface TextContent {
  type: "text";
  /** The text, exactly as produced; never trimmed. */
  text: string;
}

/**
 * An image the model looks at, in a user message or a tool result. Sent only to a model whose
 * options do not leave images out (`input: ["text"]`); the adapters check it before sending.
 */
export interface ImageContent {
  type: "image";
  /** The image bytes, base64-encoded (standard alphabet, padded; no `data:` prefix). */
  data: string;
  /** Its media type, e.g. `"image/png"`, `"image/jpeg"`, `"image/webp"`, `"image/gif"`. */
  mimeType: string;
}

/** The model's visible reasoning (`reasoning_content` / `reasoning` on the wire). */
export interface ThinkingContent {
  type: "thinking";
  /** The reasoning text, accumulated over `thinking_delta`s. */
  thinking: string;
  /**
   * Anthropic: the block's signature, sent back unchanged with the block (the API refuses an
   * altered one). For a redacted block, the opaque data. Absent for providers without one.
   */
  signature?: string;
  /** Anthropic `redacted_thinking`: the reasoning is hidden; `thinking` is empty, `signature` holds the data. */
  redacted?: boolean;
}

/** A request from the model to run one tool. */
export interface ToolCall {
  type: "toolCall";
  /** Provider-assigned id; the matching `ToolResultMessage.toolCallId` carries it back. */
  id: string;
  /** The tool's name, as the model wrote it (it may name no tool at all). */
  name: string;
  /**
   * The parsed arguments. Parsed JSON only means the text was complete, not that the arguments
   * are valid for the tool: the tool layer validates them. While the call streams (in a
   * partial message) it is `{}` and the text grows in `rawArguments`; the value so far is on
   * the model event (`toolcall_delta`'s `partialArguments`).
   */
  arguments: unknown;
  /** The argument text as it arrived on the wire; kept when it could not be parsed. */
  rawArguments?: string;
  /**
   * Set when `rawArguments` is not valid JSON at the end of the stream. Such a call is never
   * executed: the tool layer answers it with an error result carrying this message, so the model
   * can correct itself. `arguments` is then `{}`.
   */
  argumentsError?: string;
}

/** What a user message or a tool result may hold: text and images. */
export type UserContent = ImageContent | TextContent;

/** What an assistant message may hold. */
export type AssistantContent = TextContent | ThinkingContent | ToolCall;

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/**
 * Why an assistant turn ended. `stop`, `length` and `toolUse` come with a `done` event;
 * `error` and `aborted` with an `error` event.
 */
export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

/** Token accounting. Protocol data: always numbers, never guessed from text length. */
export interface Usage {
  /**
   * Prompt tokens, **all of them**: tokens read from or written to the provider's prompt cache
   * are included (OpenAI's `prompt_tokens` already counts them; an adapter whose provider counts
   * them apart, as Anthropic's `input_tokens` does, adds them in). `cacheRead` and `cacheWrite`
   * say how much of `input` the cache touched.
   */
  input: number;
  /** Completion tokens (reasoning included). */
  output: number;
  /** As reported by the provider, or `input + output`. */
  totalTokens: number;
  /**
   * The part of `input` read from the prompt cache (OpenAI `prompt_tokens_details.cached_tokens`).
   * Absent when the provider did not say; `0` when it said none.
   */
  cacheRead?: number;
  /** The part of `input` written to the prompt cache, when the provider reports it. */
  cacheWrite?: number;
}

/**
 * What one assistant turn cost, in US dollars, split as its `Usage` is: `input` prices the
 * prompt tokens the cache did not touch (`usage.input - cacheRead - cacheWrite`), `cacheRead`
 * and `cacheWrite` the cached parts, `output` the completion tokens. `total` is their sum.
 */
export interface Cost {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  total: number;
}

/**
 * What ended a turn in failure, for programs:
 * - `aborted`: the caller's signal (the only kind with `stopReason: "aborted"`);
 * - `timeout`: the request's `timeoutMs` ran out (not the caller's doing);
 * - `stall`: nothing useful arrived for `idleTimeoutMs` (no headers, or no data while the server
 *   sent nothing or only keep-alive comments);
 * - `http`: the server answered with an error status (`status` is set);
 * - `provider`: the server reported an error inside a stream it had started, or ended the turn
 *   for a reason the adapter cannot map (e.g. a content filter);
 * - `network`: the connection failed (refused, reset, DNS…);
 * - `limit`: the response went over a bound (`maxResponseBytes`, `maxContentBlocks`,
 *   `maxToolCalls`);
 * - `redirect`: a redirect the adapter does not follow (to another origin, or a 301/302/303);
 * - `protocol`: the answer is not what the protocol allows (malformed chunk, JSON instead of
 *   an event stream, a stream that ends without finishing);
 * - `request`: the request could not be built from the context.
 */
export type ErrorKind =
  | "aborted"
  | "timeout"
  | "stall"
  | "http"
  | "provider"
  | "network"
  | "limit"
  | "redirect"
  | "protocol"
  | "request";

/** The machine-readable side of a failed turn (`AssistantMessage.errorDetails`). */
export interface ErrorDetails {
  kind: ErrorKind;
  /** The HTTP status, when the server answered with an error status. */
  status?: number;
  /** The provider's own error code or type, e.g. `"rate_limit_exceeded"`, `"overloaded_error"`. */
  code?: string;
  /** How long the server asked to wait before trying again (`Retry-After`), in milliseconds. */
  retryAfterMs?: number;
  /**
   * True when the same request may succeed if sent again later (rate limits, overload, 5xx,
   * connection failures). The adapter already retried what it safely could before any content
   * arrived; this says whether a caller's own later retry makes sense.
   */
  retryable: boolean;
  /**
   * How many HTTP requests the turn took, retries included: 1 when the first request failed in a
   * way not worth retrying (or failed mid-stream), n after n-1 retries (`maxRetries + 1` when
   * every retry failed too), 0 when nothing was sent (aborted before sending, or a request that
   * could not be built). A followed same-origin redirect is part of the same request. Set by the
   * adapters over HTTP on every failed turn (the same number as `AssistantMessage.attempts`);
   * absent where no request stands behind the message (a scripted model, an abort seen by the
   * agent loop before the model was called).
   */
  attempts?: number;
}

/** What the user (or a program speaking for the user) says. */
export interface UserMessage {
  role: "user";
  content: UserContent[];
  /** Milliseconds since the epoch, set when the message is made. */
  timestamp: number;
  /**
   * Deferred tools that stay declared: set on a compaction's summary, it names the
   * tools the condensed part of the conversation declared (`ToolResultMessage.declaredTools`), so
   * a compaction does not take found tools away from the model. No provider puts it on the wire.
   */
  declaredTools?: string[];
}

/** One model turn, final or partial. */
export interface AssistantMessage {
  role: "assistant";
  /** Blocks in the order the model produced them; `contentIndex` in events points here. */
  content: AssistantContent[];
  /** Who served it, e.g. `"openai"`, `"scripted"`. */
  provider: string;
  /** The model id as the provider named it. */
  model: string;
  usage: Usage;
  stopReason: StopReason;
  /** Set when `stopReason` is `error` or `aborted`: what went wrong, readable by a person. */
  errorMessage?: string;
  /**
   * Set beside `errorMessage` by provider adapters: the same failure for programs, so no caller
   * parses text to decide what to do (retry later, re-authenticate, shorten the context…).
   */
  errorDetails?: ErrorDetails;
  /**
   * How many HTTP requests this turn took, on **every** message a provider adapter over HTTP ends,
   * success or failure: 1 when the first request was answered, n after n-1 retries (a rate limit,
   * an overloaded server, a refused connection before the first byte), so a program sees retries
   * without wrapping `fetch` to count them. On a failed turn `errorDetails.attempts` holds the same
   * number. Absent on messages no request stands behind (a scripted model). Never sent to a model.
   */
  attempts?: number;
  /**
   * Notes about how the message was made that are not errors, e.g. "the server sent no usage;
   * usage is the explicit default (all zero)". Never sent back to a model.
   */
  diagnostics?: string[];
  /**
   * What the turn cost, priced from the model catalogue (`costOf`) by the model that answered.
   * Absent when the price is unknown: an unknown price is never shown as zero.
   */
  cost?: Cost;
  /** Milliseconds since the epoch, set when the message is made. */
  timestamp: number;
}

/** The result of one tool call, sent back to the model. */
export interface ToolResultMessage<TDetails = unknown> {
  role: "toolResult";
  /** The `ToolCall.id` this answers. */
  toolCallId: string;
  /** The tool's name as the call gave it. */
  toolName: string;
  /** What the model reads (and, with images, looks at). */
  content: UserContent[];
  /** Structured data for programs and UIs; never sent to the model. */
  details?: TDetails;
  /** True when the call failed; `content` then says why, for the model to read. */
  isError: boolean;
  /** Milliseconds since the epoch, set when the message is made. */
  timestamp: number;
  /**
   * The deferred tools this result declared (`AgentToolResult.declareTools`): from the next model call on they are
   * declared to the model too. The transcript is the record, so a run resumed from it declares
   * the same tools. Set by the loop from `AgentToolResult.declareTools`; like `details`, no provider
   * puts it on the wire.
   */
  declaredTools?: string[];
}

/** The three canonical roles a model understands. */
export type Message = UserMessage | AssistantMessage | ToolResultMessage;

/**
 * Application-defined message types, added by declaration merging:
 *
 * ```ts
 * declare module "@pi/course" {
 *   interface CustomAgentMessages { note: { role: "note"; text: string; timestamp: number } }
 * }
 * ```
 *
 * Each value type must have a `role` that no canonical message uses.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface CustomAgentMessages {}

/** Anything an agent's transcript may hold: canonical messages and the app's own. */
export type AgentMessage = Message | CustomAgentMessages[keyof CustomAgentMessages];

/** What an agent keeps between turns. */
export interface AgentContext {
  systemPrompt?: string;
  messages: AgentMessage[];
  /** The tools the model may call in this run. */
  tools?: AgentTool<any, any>[];
}

/** What a model may call: a name, a description, and a JSON Schema for the arguments. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** A JSON Schema object describing the arguments. */
  parameters: Record<string, unknown>;
}

/** What a model receives for one turn. */
export interface Context {
  systemPrompt?: string;
  messages: Message[];
  tools?: ToolDefinition[];
}

// ---------------------------------------------------------------------------------------------
// Model events and the Model contract
// ---------------------------------------------------------------------------------------------

/**
 * The events of one model turn. `partial` is the message as built so far (the same object
 * throughout one turn; read it, don't keep it). The stream ends with exactly one `done` or
 * `error`, whose message is final.
 */
export type ModelEvent =
  | { type: "start"; partial: AssistantMessage }
  | { type: "text_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  | { type: "thinking_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  | {
      type: "toolcall_delta";
      contentIndex: number;
      /** A piece of the call's JSON argument text. */
      delta: string;
      partial: AssistantMessage;
      /**
       * Best-effort value of the arguments so far (from an incremental parser), for UIs that
       * want to show a path or a command early. Never execute it. A live view, like `partial`:
       * the same object keeps growing with later deltas (read it, don't keep it; copy to keep).
       * This is the one place the value lives while the call streams: the block's `arguments`
       * stays `{}` (its text grows in `rawArguments`) until `toolcall_end`. Every model here
       * follows it: the OpenAI-compatible and Anthropic adapters and `ScriptedModel`.
       */
      partialArguments?: unknown;
    }
  | { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial: AssistantMessage }
  | { type: "done"; reason: "stop" | "length" | "toolUse"; message: AssistantMessage }
  | { type: "error"; reason: "error" | "aborted"; error: AssistantMessage };

// ---------------------------------------------------------------------------------------------
// Tools (chapter 06)
// ---------------------------------------------------------------------------------------------

/** What a tool returns. */
export interface AgentToolResult<TDetails = unknown> {
  /** What the model reads (text, and images for a model that takes them). */
  content: UserContent[];
  /** Structured data for programs and UIs. */
  details: TDetails;
  /** Suggests ending the run; a batch ends it only when every result in it says so. */
  terminate?: boolean;
  /** The call failed; `content` says why. */
  isError?: boolean;
  /**
   * Deferred tools to declare to the model from its next call on (`exposure: "deferred"`): the loop records
   * the ones newly declared on the result message (`ToolResultMessage.declaredTools`). Names that
   * are not deferred tools of the run, or are declared already, are ignored, and so is the field
   * on an error result.
   */
  declareTools?: string[];
}

/** Streams a partial result while a tool runs (becomes `tool_execution_update`). */
export type AgentToolUpdateCallback<TDetails = unknown> = (partialResult: AgentToolResult<TDetails>) => void;

/** `parallel` (default) or `sequential`; one sequential tool makes its whole batch sequential. */
export type ToolExecutionMode = "parallel" | "sequential";

/**
 * Who sees a tool, and who may call it:
 * - `direct` (the default): declared to the model in every request, and callable by it;
 * - `deferred`: declared only once found (`tool_search` asks the loop to declare it), then callable;
 * - `codemode`: never declared; callable only from a codemode script (`ToolExecutionContext.callTool`);
 * - `hidden`: never declared, callable by neither the model nor a script (the application's own).
 *
 * The loop refuses a model's call to a tool that was not declared to it in that request.
 */
export type ToolExposure = "direct" | "deferred" | "codemode" | "hidden";

/**
 * What the loop hands a tool besides its arguments: a way to call the run's other
 * tools through the same pipeline as a model's call (exposure, validation, hooks, the events with
 * `parentToolCallId`). Nested call ids are the parent's id with `.1`, `.2`, … appended.
 */
export interface ToolExecutionContext {
  /**
   * Calls another tool of the run. Never rejects for the tool's sake: a refusal, invalid
   * arguments, a block or a throw come back as `isError: true` with the reason as text.
   * `options.signal` aborts this call alone (as the run's signal aborts every call): the caller
   * stops a call it no longer waits for, and the call is answered as aborted at once.
   */
  callTool(
    name: string,
    args: unknown,
    options?: { signal?: AbortSignal },
  ): Promise<{ result: AgentToolResult<unknown>; isError: boolean }>;
}

/**
 * A tool the agent can run, with a TypeBox schema for its parameters.
 *
 * `TParameters` is declared covariant (`out`): an `AgentTool<TObject<…>>` is an `AgentTool` (and
 * fits `AgentTool<any, any>[]`) by comparing the schemas alone. Without the annotation TypeScript
 * would measure the variance by relating TypeBox's `Static` conditional types to each other,
 * which costs a user's type check about 150,000 types on the first tool (see
 * test/fixtures/type-cost).
 */
export interface AgentTool<out TParameters extends TSchema = TSchema, TDetails = unknown> {
  /** The name the model calls it by. */
  name: string;
  /** A short human label for UIs. */
  label: string;
  /** What it does, written for the model. */
  description: string;
  /** JSON Schema for the model and static type for `execute`. */
  parameters: TParameters;
  /**
   * Contract: may throw or reject; the loop turns that into an error result the model can read.
   * Honour `signal`: once it fires, the loop answers the call as aborted at once and ignores a
   * late result. `onUpdate` may be called any number of times; calls after the promise settles
   * are ignored.
   */
  execute(
    toolCallId: string,
    params: Static<TParameters>,
    signal?: AbortSignal,
    onUpdate?: AgentToolUpdateCallback<TDetails>,
    context?: ToolExecutionContext,
  ): Promise<AgentToolResult<TDetails>>;
  /**
   * Contract: repairs raw arguments before validation (e.g. a renamed field). Receives a copy;
   * the tool call in the transcript is never changed.
   */
  prepareArguments?(args: unknown): unknown;
  /** Defaults to `parallel`. */
  executionMode?: ToolExecutionMode;
  /** Who sees and may call the tool; defaults to `direct` (see `ToolExposure`). */
  exposure?: ToolExposure;
  /**
   * Whether a call interrupted by a crash may simply be run again when a durable run recovers.
   * `"safe"` only for a tool whose call has no effect beyond its result (`read`, `ls`); the default
   * (`"unsafe"`) gives an interrupted call an error result saying it may or may not have taken effect.
   */
  replay?: "safe" | "unsafe";
  /**
   * Asked when a durable run recovers a call of this tool that started and was interrupted by a
   * crash, before the call is answered as interrupted: stop what is left of it (e.g. a command
   * still running) and say what became of it, in a sentence the model reads after the interrupted
   * text (undefined: nothing to say). Contract: may throw (then nothing is said); returns soon.
   */
  settleInterrupted?(toolCallId: string, args: unknown): Promise<string | undefined> | string | undefined;
}
