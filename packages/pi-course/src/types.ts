/**
 * The vocabulary of @pi/course: canonical messages, model events, the `Model` contract,
 * and (from chapter 06 on) tools and the agent loop.
 *
 * Everything a transcript stores is plain JSON-serialisable data. Provider wire formats and
 * UI text are other layers; only these shapes are stored and replayed.
 */
// #region ch06
import type { Static, TSchema } from "typebox";
// #endregion
// #region ch11
import type { CompactionFailure, Summarizer } from "./compaction.js";
import type { ContextProjection } from "./context.js";
import type { TokenEstimator } from "./token-estimate.js";
// #endregion
import type { AssistantMessageEventStream } from "./event-stream.js";
// #region ch07
import type { EventStream } from "./event-stream.js";
// #endregion

// ---------------------------------------------------------------------------------------------
// Content blocks
// ---------------------------------------------------------------------------------------------

/** A block of plain text. */
export interface TextContent {
  type: "text";
  /** The text, exactly as produced; never trimmed. */
  text: string;
}

// #region ch05
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
// #endregion

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
   * the model event (`partialArguments`, chapter 05).
   */
  arguments: unknown;
  /** The argument text as it arrived on the wire; kept when it could not be parsed. */
  rawArguments?: string;
  // #region ch05
  /**
   * Set when `rawArguments` is not valid JSON at the end of the stream. Such a call is never
   * executed: the tool layer answers it with an error result carrying this message, so the model
   * can correct itself. `arguments` is then `{}`.
   */
  argumentsError?: string;
  // #endregion
}

/** What a user message or a tool result may hold: text, and (from chapter 05) images. */
export type UserContent =
  | TextContent
  // #region ch05
  | ImageContent
  // #endregion
  ;

/** What an assistant message may hold. */
export type AssistantContent =
  | TextContent
  // #region ch05
  | ThinkingContent
  // #endregion
  | ToolCall;

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
  // #region ch05
  /**
   * The part of `input` read from the prompt cache (OpenAI `prompt_tokens_details.cached_tokens`).
   * Absent when the provider did not say; `0` when it said none.
   */
  cacheRead?: number;
  /** The part of `input` written to the prompt cache, when the provider reports it. */
  cacheWrite?: number;
  // #endregion
}

// #region ch05
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
}
// #endregion

/** What the user (or a program speaking for the user) says. */
export interface UserMessage {
  role: "user";
  content: UserContent[];
  /** Milliseconds since the epoch, set when the message is made. */
  timestamp: number;
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
  // #region ch05
  /**
   * Set beside `errorMessage` by provider adapters: the same failure for programs, so no caller
   * parses text to decide what to do (retry later, re-authenticate, shorten the context…).
   */
  errorDetails?: ErrorDetails;
  /**
   * Notes about how the message was made that are not errors, e.g. "the server sent no usage;
   * usage is the explicit default (all zero)". Never sent back to a model.
   */
  diagnostics?: string[];
  // #endregion
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
  // #region ch06
  /** The tools the model may call in this run. */
  tools?: AgentTool<any, any>[];
  // #endregion
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
  // #region ch05
  | { type: "thinking_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  // #endregion
  | {
      type: "toolcall_delta";
      contentIndex: number;
      /** A piece of the call's JSON argument text. */
      delta: string;
      partial: AssistantMessage;
      // #region ch05
      /**
       * Best-effort value of the arguments so far (from an incremental parser), for UIs that
       * want to show a path or a command early. Never execute it. A live view, like `partial`:
       * the same object keeps growing with later deltas (read it, don't keep it; copy to keep).
       * This is the one place the value lives while the call streams: the block's `arguments`
       * stays `{}` (its text grows in `rawArguments`) until `toolcall_end`. Every model here
       * follows it: the OpenAI-compatible and Anthropic adapters and `ScriptedModel`.
       */
      partialArguments?: unknown;
      // #endregion
    }
  | { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial: AssistantMessage }
  | { type: "done"; reason: "stop" | "length" | "toolUse"; message: AssistantMessage }
  | { type: "error"; reason: "error" | "aborted"; error: AssistantMessage };

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
// #region ch06

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
}

/** Streams a partial result while a tool runs (becomes `tool_execution_update`). */
export type AgentToolUpdateCallback<TDetails = unknown> = (
  partialResult: AgentToolResult<TDetails>,
) => void;

/** `parallel` (default) or `sequential`; one sequential tool makes its whole batch sequential. */
export type ToolExecutionMode = "parallel" | "sequential";

/** A tool the agent can run, with a TypeBox schema for its parameters. */
export interface AgentTool<TParameters extends TSchema = TSchema, TDetails = unknown> {
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
  ): Promise<AgentToolResult<TDetails>>;
  /**
   * Contract: repairs raw arguments before validation (e.g. a renamed field). Receives a copy;
   * the tool call in the transcript is never changed.
   */
  prepareArguments?(args: unknown): unknown;
  /** Defaults to `parallel`. */
  executionMode?: ToolExecutionMode;
}
// #endregion
// #region ch07

// ---------------------------------------------------------------------------------------------
// The agent loop (chapter 07)
// ---------------------------------------------------------------------------------------------

/**
 * The lifecycle of an agent run, in the order a consumer sees it.
 *
 * An error or aborted assistant message ends the run: tool calls inside it are never executed
 * nor answered (no tool events, `turn_end.toolResults` is empty), and the message is dropped
 * from the model's view (`defaultConvertToLlm`, the wire), so a continued run stays valid.
 *
 * Tool-call ids are unique within a recorded message: providers refuse two calls, or two
 * results, with one id. When a model repeats an id in one message, the first call keeps it and
 * runs; each repeat gets a fresh id (`<id>_dup1`, `<id>_dup2`, …) in the copy of the message that
 * `message_end`, `turn_end` and the transcript carry, one start/end pair, and an error result
 * saying the id was repeated, without running. (`message_update`'s partial keeps the model's ids.)
 */
export type AgentEvent =
  | { type: "agent_start" }
  /**
   * The run's last event. `errorMessage` is set when the turn limit (`maxTurns`) stopped a run
   * whose model asked for tools: their results are in `messages`, but no model call answers
   * them; `agentLoopContinue` on the transcript takes the next turn. No turn is opened for it.
   */
  | { type: "agent_end"; messages: AgentMessage[]; errorMessage?: string }
  | { type: "turn_start" }
  | { type: "turn_end"; message: AssistantMessage; toolResults: ToolResultMessage[] }
  /** For an assistant message, `message` is the model's partial (live) object: read it, don't keep it. */
  | { type: "message_start"; message: AgentMessage }
  /** `message` is the partial as of `event` (the same live object throughout the turn). */
  | { type: "message_update"; message: AssistantMessage; event: ModelEvent }
  | { type: "message_end"; message: AgentMessage }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; args: unknown }
  | {
      type: "tool_execution_update";
      toolCallId: string;
      toolName: string;
      args: unknown;
      partialResult: AgentToolResult<unknown>;
    }
  | {
      type: "tool_execution_end";
      toolCallId: string;
      toolName: string;
      result: AgentToolResult<unknown>;
      isError: boolean;
    };

/** What `beforeToolCall` sees. */
export interface BeforeToolCallContext {
  /** The assistant message that issued the call. */
  assistantMessage: AssistantMessage;
  /** The call as the model wrote it (never changed). */
  toolCall: ToolCall;
  /** The validated arguments the tool would receive. */
  args: unknown;
  tool: AgentTool<any, any>;
  context: AgentContext;
}

/** `{ block: true, reason }` stops the call; the reason becomes its error result. */
export interface BeforeToolCallResult {
  block?: boolean;
  reason?: string;
}

/** What `afterToolCall` sees. */
export interface AfterToolCallContext extends BeforeToolCallContext {
  result: AgentToolResult<unknown>;
  isError: boolean;
}

/**
 * Field-by-field override of a tool result; a field left out keeps the tool's value, a field
 * present replaces it (`details: undefined` clears the details). `isError` overrides the result's
 * flag, `tool_execution_end.isError` and the result message alike.
 */
export interface AfterToolCallResult {
  content?: UserContent[];
  details?: unknown;
  isError?: boolean;
  terminate?: boolean;
}

/** How the agent loop is driven. */
export interface AgentLoopConfig {
  /** The model for every turn. */
  model: Model;
  /**
   * Contract: projects the transcript onto what the model understands: keep or convert the
   * canonical roles, convert or drop custom messages. May throw; the run then ends cleanly.
   * Receives a copy of the array (or what `transformContext` returned). The default keeps
   * `user`, `toolResult` and `assistant` messages except error/aborted ones, and drops the rest.
   * Like every hook: once the run's signal is aborted, the loop stops waiting for it.
   */
  convertToLlm?: (messages: AgentMessage[]) => Message[] | Promise<Message[]>;
  /**
   * Contract: runs before `convertToLlm` on every turn (pruning, injecting context). Returns a
   * new array; may throw, and the run then ends cleanly.
   */
  transformContext?: (
    messages: AgentMessage[],
    signal?: AbortSignal,
  ) => AgentMessage[] | Promise<AgentMessage[]>;
  /** `parallel` (default) or `sequential` for every batch. */
  toolExecution?: ToolExecutionMode;
  /**
   * Contract: runs after validation, before `execute`; may block the call. May throw: that is an
   * application bug, so the call gets an error result naming the hook, the batch's calls not yet
   * started are answered without running, and the run ends (error message, turn_end, agent_end).
   * An answer that cannot be read (a `block` getter that throws) and not settling within
   * `hookTimeoutMs` count as a throw. An abort while it runs answers the call as aborted.
   */
  beforeToolCall?: (
    ctx: BeforeToolCallContext,
    signal?: AbortSignal,
  ) => BeforeToolCallResult | undefined | Promise<BeforeToolCallResult | undefined>;
  /**
   * Contract: runs after `execute`; may override fields of the result. May throw: the call then
   * gets an error result naming the hook and the run ends, as for `beforeToolCall`; so does an
   * answer that cannot be read (a getter that throws, `content` that is not an array) or not
   * settling within `hookTimeoutMs`. An abort while it runs keeps the tool's own result (the
   * tool already ran); its late answer is ignored.
   */
  afterToolCall?: (
    ctx: AfterToolCallContext,
    signal?: AbortSignal,
  ) => AfterToolCallResult | undefined | Promise<AfterToolCallResult | undefined>;
  /**
   * Contract: polled after every turn that does not end the run (after a text-only turn as
   * well as after a tool batch); messages returned are injected before the next
   * model call. May throw; the run then ends cleanly. Never polled after an abort. Messages
   * returned synchronously are always kept; a promise still pending when the signal is aborted
   * is no longer waited for and its answer is ignored, so dequeue only when answering.
   */
  getSteeringMessages?: () => AgentMessage[] | Promise<AgentMessage[]>;
  /**
   * Contract: polled when the model stops naturally; messages returned start another turn.
   * May throw; the run then ends cleanly. After an abort, as for `getSteeringMessages`.
   */
  getFollowUpMessages?: () => AgentMessage[] | Promise<AgentMessage[]>;
  /**
   * The most model turns one run may take (default 50). The turn that makes the last allowed
   * model call is the run's last turn: no queue is polled after it (queued messages stay queued),
   * and if its model asked for tools, their results are recorded and `agent_end.errorMessage`
   * says the limit was reached. No turn is opened without a model call.
   */
  maxTurns?: number;
  /**
   * How long one call of `beforeToolCall` or `afterToolCall` may take, in milliseconds (1 to
   * 2³¹−1). Unset (the default), the loop waits for them without a bound: without an abort, a
   * hook that never settles keeps the run pending. Past the bound the call gets an error result
   * naming the hook and the run ends, as when the hook throws; its late answer is ignored.
   * Other user code is bounded by the signal only: once it is aborted, the loop stops waiting
   * for hooks, queue getters, tools, the model and the event sink alike.
   */
  hookTimeoutMs?: number;
}

/**
 * The stream `agentLoop` returns: lifecycle events, and the new messages as the result.
 *
 * Breaking out of a `for await` stops the reading, not the run (others may still await
 * `result()`, and a tool may be half done): tools and model calls go on until the run ends. To
 * stop the run, call `abort()` (or abort the signal given to `agentLoop`), then break or keep
 * reading to the end: the run still ends well formed, every tool call answered.
 */
export interface AgentEventStream extends EventStream<AgentEvent, AgentMessage[]> {
  /** Stops the run as aborting `agentLoop`'s signal would: no further model call. Idempotent. */
  abort(reason?: unknown): void;
}
// #endregion
// #region ch09

// ---------------------------------------------------------------------------------------------
// The stateful agent (chapter 09)
// ---------------------------------------------------------------------------------------------

/** How much one poll of a queue takes: the oldest message (default), or every queued message. */
export type QueueMode = "one-at-a-time" | "all";

/** What a new `Agent` starts from. Arrays are copied: the caller's are never kept. */
export interface AgentInitialState {
  systemPrompt?: string;
  /** The model of every run. Without one, a run ends at once with an error that says to set it. */
  model?: Model;
  tools?: AgentTool<any, any>[];
  /** A transcript to continue from. */
  messages?: AgentMessage[];
}

/** How an `Agent` is built. The hooks are handed to the loop as they are (see `AgentLoopConfig`). */
export interface AgentOptions {
  initialState?: AgentInitialState;
  convertToLlm?: AgentLoopConfig["convertToLlm"];
  transformContext?: AgentLoopConfig["transformContext"];
  beforeToolCall?: AgentLoopConfig["beforeToolCall"];
  afterToolCall?: AgentLoopConfig["afterToolCall"];
  toolExecution?: ToolExecutionMode;
  /** The most model turns one run may take (default 50). */
  maxTurns?: number;
  /** How many steering messages one poll injects. Default `one-at-a-time`. */
  steeringMode?: QueueMode;
  /** How many follow-up messages one poll injects. Default `one-at-a-time`. */
  followUpMode?: QueueMode;
  // #region ch11
  /**
   * A session to resume from and to record into (a chapter 10 `SessionFile` fits). The
   * transcript starts as the session's path to its leaf (see `AgentSessionStore`); then every
   * `message_end` message is appended to it. Not together with `initialState.messages`.
   */
  session?: AgentSessionStore;
  /** Keep what the model sees within a token budget, and compact the session when it grows. */
  contextBudget?: AgentContextBudget;
  // #endregion
}

/**
 * A read-only snapshot of an `Agent`, taken when `agent.state` is read: later events do not
 * change it. Reduced from the loop's events before any listener sees the event.
 */
export interface AgentState {
  readonly systemPrompt: string | undefined;
  readonly model: Model;
  readonly tools: readonly AgentTool<any, any>[];
  /** The transcript: every message of every run so far (a message is in it from its `message_end`). */
  readonly messages: readonly AgentMessage[];
  /** True from `prompt()`/`continue()` until `agent_end` has been delivered to every listener. */
  readonly isStreaming: boolean;
  /** The assistant message being streamed (the model's live partial), between its start and end. */
  readonly streamingMessage?: AssistantMessage;
  /** Ids of the tool calls started (`tool_execution_start`) and not yet ended. */
  readonly pendingToolCalls: ReadonlySet<string>;
  /**
   * Why the last failed turn failed, or that the turn limit left tool results unanswered
   * (`agent_end.errorMessage`), or which listener threw. Cleared when a run starts.
   */
  readonly errorMessage?: string;
}

/**
 * Receives every event of every run, with the run's signal.
 * Contract: listeners are awaited one after another, in subscription order, after the state has
 * taken the event in; a slow listener holds the run back. A throw (or rejection) stops the run as
 * `abort()` does, later listeners still get the event, and `prompt()`/`continue()` rejects with an
 * `AgentListenerError` once the run has ended. Never await `waitForIdle()`, `prompt()` or
 * `continue()` inside a listener: the run waits for the listener.
 */
export type AgentListener = (event: AgentEvent, signal: AbortSignal) => void | Promise<void>;
// #endregion
// #region ch10

/**
 * The first line of a session file. Not an entry of the tree: it says what the file is.
 * Contract: `version` is the format version of the lines that follow; a reader refuses a
 * version newer than it knows, with what to do.
 */
export interface SessionHeader {
  type: "session";
  /** The format version of the file. */
  version: number;
  /** The session's id (unique among the sessions of one folder). */
  id: string;
  /** When the session was created (ISO 8601). */
  timestamp: string;
  /** The working folder the session ran in (absolute). */
  cwd: string;
}

/** What every entry of a session tree has. */
export interface SessionEntryBase {
  /** Short, unique within the file, made by the component that appends. */
  id: string;
  /** The entry this one continues; `null` for a root. Branching is appending a child of an older entry. */
  parentId: string | null;
  /** When the entry was appended (ISO 8601). */
  timestamp: string;
}

/** One message of the transcript (custom messages included). */
export interface MessageEntry extends SessionEntryBase {
  type: "message";
  message: AgentMessage;
}

/** A name for an entry (a bookmark); `label: null` clears it. Not part of the model's context. */
export interface LabelEntry extends SessionEntryBase {
  type: "label";
  /** The entry named. */
  targetId: string;
  label: string | null;
}

/**
 * Not an entry: a line that says the line before it holds the torn bytes of an earlier crash
 * (`offset` and `length` in bytes), kept in the file as they were. It is written once, by the
 * first append after the torn tail was found; readers report that line and skip it.
 */
export interface SessionTornMark {
  type: "torn";
  /** Byte offset of the torn line in the file. */
  offset: number;
  /** Its length in bytes (without the newline written after it). */
  length: number;
  /** When the mark was written (ISO 8601). */
  timestamp: string;
}
// #endregion
// #region ch11

/**
 * What compaction leaves in the tree: a summary of everything on the path before
 * `firstKeptEntryId`. The entries themselves stay in the file; the projection of the path
 * starts from the summary, then the entries from `firstKeptEntryId` on.
 */
export interface CompactionEntry extends SessionEntryBase {
  type: "compaction";
  /** The structured summary of what was cut, as text the model reads. */
  summary: string;
  /** The first entry of the path that is kept verbatim after the summary. */
  firstKeptEntryId: string;
  /** Estimated tokens of the context before compaction. */
  tokensBefore: number;
  /** Estimated tokens of the context after compaction (summary + kept entries). */
  tokensAfter: number;
}
// #endregion
// #region ch10

/** One line of a session file after the header. */
export type SessionEntry =
  | MessageEntry
  | LabelEntry
  // #region ch11
  | CompactionEntry
  // #endregion
  ;
// #endregion
// #region ch11

// ---------------------------------------------------------------------------------------------
// The Agent with a session and a context budget (chapter 11)
// ---------------------------------------------------------------------------------------------

/** An entry as the agent hands it to its session: the session makes `id` and `timestamp`. */
export type AgentSessionEntryInput = Omit<MessageEntry, "id" | "timestamp"> | Omit<CompactionEntry, "id" | "timestamp">;

/**
 * What an `Agent` needs of a session; a chapter 10 `SessionFile` fits it as it is.
 *
 * The agent keeps its own place in the tree (the entry it continues from): it starts at the
 * session's `leaf` (or the entry given to `setSession`), and each entry it appends becomes the
 * next one's parent. What the agent's transcript (`state.messages`) holds is
 * `transcriptOf(pathToLeaf(place)).messages`: with a compaction on the path, the newest one's
 * summary (a user message) and the entries it kept, then the rest; the full history stays in
 * the session.
 */
export interface AgentSessionStore {
  /** The entry to continue from when none is named: the last one written (undefined when empty). */
  readonly leaf: { readonly id: string } | undefined;
  /** The entries from the root down to `id`, inclusive. */
  pathToLeaf(id: string): readonly SessionEntry[];
  /**
   * Contract: writes the entry as a child of `entry.parentId` and resolves with its new id once
   * it is written (a later append may name it as parent); rejects when it could not write it.
   * The agent calls it one entry at a time, in transcript order, awaiting each.
   */
  append(entry: AgentSessionEntryInput): Promise<string>;
}

/**
 * A token budget for what the model sees, and automatic compaction of the session.
 *
 * Before every model call the transcript is projected to `budget` (`projectMessages`: whole
 * interactions dropped from the oldest). Order: a user `transformContext` runs first (it sees
 * the whole transcript), then the projection, so what reaches `convertToLlm` fits the budget.
 * Compaction runs at the start of a run (before its first model call, never while a tool call
 * is pending) when the context passed `compactAt` of the budget; it needs a session.
 */
export interface AgentContextBudget {
  /** Tokens for the system prompt and the messages (leave room for tools and the answer). */
  budget: number;
  /** Defaults to `estimateTokens` (chars/4, calibrated by the newest trusted usage). */
  estimator?: TokenEstimator;
  /**
   * Compact when the context's tokens (the estimator's count of the whole transcript: the
   * newest trusted usage plus chars/4 of what came after) reach this fraction of `budget`.
   * Default 0.8; `false` never compacts automatically.
   */
  compactAt?: number | false;
  /** Tokens of the newest messages a compaction keeps verbatim. Default a quarter of `budget`. */
  keepRecentTokens?: number;
  /** The model asked for the summary. Default: the agent's model. */
  summaryModel?: Model;
  /** Replaces the default summary request (see `compact`). */
  summarize?: Summarizer;
  /**
   * Contract: called after every projection, before the model call, with what the model will
   * see; `overflow` is set when even the newest interaction does not fit (it is then sent whole,
   * never cut). Must not throw: a throw ends the run as a throwing `transformContext` does.
   */
  onProjection?: (projection: ContextProjection) => void;
  /**
   * Contract: called after every automatic compaction, done or failed (a failed one appends
   * nothing, and the run goes on with the projection alone). Must not throw: a throw makes
   * `prompt()`/`continue()` reject before the run starts.
   */
  onCompaction?: (report: AgentCompactionReport) => void;
}

/** What an automatic compaction did. */
export type AgentCompactionReport =
  | {
      ok: true;
      /** The context's tokens before (what passed the threshold). */
      tokensBefore: number;
      /** The context's tokens after: the summary, the kept messages and the system prompt. */
      tokensAfter: number;
      /** `compactAt × budget`. */
      threshold: number;
      /** The entry appended to the session. */
      entry: CompactionEntry;
    }
  | {
      ok: false;
      tokensBefore: number;
      threshold: number;
      /** Why nothing was appended. */
      reason: CompactionFailure;
    };
// #endregion
