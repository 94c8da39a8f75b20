/**
 * The agent layer's vocabulary: the events of a run and the loop's configuration (chapter 07),
 * the stateful `Agent`'s options and state (chapter 09), and what the `Agent` needs of a session
 * and a context budget (chapter 11). Plain types; the data they carry is the vocabulary of
 * `../types.ts`.
 */
import type { EventStream } from "../event-stream.js";
import type { Model } from "../model.js";
import type {
  AgentContext,
  AgentMessage,
  AgentTool,
  AgentToolResult,
  AssistantMessage,
  Message,
  ModelEvent,
  ToolCall,
  ToolExecutionContext,
  ToolExecutionMode,
  ToolResultMessage,
  UserContent,
} from "../types.js";
// #region ch11
import type { CompactionFailure, Summarizer } from "../session/compaction.js";
import type { ContextProjection } from "../session/context.js";
import type { TokenEstimator } from "../session/token-estimate.js";
import type { CompactionEntry, MessageEntry, ModelRouteEntry, SessionEntry } from "../session/types.js";
// #endregion

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
  | {
      type: "tool_execution_start";
      toolCallId: string;
      toolName: string;
      args: unknown;
      /** Set on a nested call made by a script: the id of the call whose script made it. */
      parentToolCallId?: string;
    }
  | {
      type: "tool_execution_update";
      toolCallId: string;
      toolName: string;
      args: unknown;
      partialResult: AgentToolResult<unknown>;
      parentToolCallId?: string;
    }
  | {
      type: "tool_execution_end";
      toolCallId: string;
      toolName: string;
      result: AgentToolResult<unknown>;
      isError: boolean;
      parentToolCallId?: string;
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
  transformContext?: (messages: AgentMessage[], signal?: AbortSignal) => AgentMessage[] | Promise<AgentMessage[]>;
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
   * Contract: the run's tools as they are now, for tools that join or leave while a run goes on
   * (an MCP server that became ready). Read before each model request, once the model's message
   * is delivered (`message_end`: a listener that awaits can let a tool join before the calls
   * run), and before each call's result is recorded; when it gives another array than the run has, the run takes it from
   * then on (the declared set is worked out again from the transcript, as a resumed run does).
   * Must return an array, and should return the same array while nothing changed. May throw:
   * before a request, the run then ends cleanly; elsewhere the run keeps its tools until then.
   * Absent (the default): `context.tools` for the whole run.
   */
  currentTools?: () => readonly AgentTool<any, any>[];
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

/** A call as the tool batch answered it. */
export interface AnsweredToolCall {
  result: AgentToolResult<unknown>;
  isError: boolean;
}

/**
 * Runs a call made by another call's tool through the batch's pipeline (its events, no result
 * message); `signal` (with the run's) aborts it.
 */
export type NestedCallRunner = (call: ToolCall, signal?: AbortSignal) => Promise<AnsweredToolCall>;

/**
 * What a feature adds to the tool batch of one run, without patching the loop (tool search's
 * declarations, codemode's nested calls); every hook is optional, and they are asked in order.
 * Contract: the hooks are the library's own code, called synchronously inside the pipeline; they
 * do not throw.
 */
export interface ToolMiddleware {
  /** Whether `tool` is declared to the model in the next request (every hook must agree). */
  declares?(tool: AgentTool<any, any>): boolean;
  /** Why `call` is answered without running, or `undefined`. `parent`: the call whose tool made it. */
  refuse?(call: ToolCall, parent: ToolCall | undefined): string | undefined;
  /** The `context` argument of `call`'s `execute`; `nested` runs the calls its tool makes. */
  context?(call: ToolCall, nested: NestedCallRunner): ToolExecutionContext | undefined;
  /** Sees the result message of a call before it is emitted; it may add fields to it. */
  result?(message: ToolResultMessage, done: AnsweredToolCall): void;
  /** Sees a batch's result messages once they are in the transcript; true when `declares` changed. */
  afterBatch?(results: readonly ToolResultMessage[]): boolean;
}

/** Makes one run's hooks from the run's context (its tools, and the transcript it starts from). */
export type ToolMiddlewareFactory = (context: AgentContext) => ToolMiddleware;

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
  currentTools?: AgentLoopConfig["currentTools"];
  /** The most model turns one run may take (default 50). */
  maxTurns?: number;
  /** How many steering messages one poll injects. Default `one-at-a-time`. */
  steeringMode?: QueueMode;
  /** How many follow-up messages one poll injects. Default `one-at-a-time`. */
  followUpMode?: QueueMode;
  // #region ch11
  /**
   * A session to resume from and to record into (a `SessionFile` fits). The
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
// #region ch11

// ---------------------------------------------------------------------------------------------
// The Agent with a session and a context budget (chapter 11)
// ---------------------------------------------------------------------------------------------

/** An entry as the agent hands it to its session: the session makes `id` and `timestamp`. */
export type AgentSessionEntryInput =
  | Omit<MessageEntry, "id" | "timestamp">
  | Omit<CompactionEntry, "id" | "timestamp">
  | Omit<ModelRouteEntry, "id" | "timestamp">;

/**
 * What an `Agent` needs of a session; a `SessionFile` fits it as it is.
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
  /**
   * Waits for the pending writes and closes the store (a `SessionFile` has it). The agent never
   * calls it: whoever opened the store closes it, e.g. `await agent.session?.close?.()` once idle.
   */
  close?(): Promise<void>;
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
