/**
 * The stateful `Agent`: the agent loop (chapter 07) with a memory. It owns a transcript, runs
 * one loop at a time over it, reduces every event into its state before its listeners see the
 * event, and keeps two queues of messages the user adds while a run is going.
 *
 * What it promises:
 * - One run at a time. `prompt()`/`continue()` during a run reject with what to do instead;
 *   they resolve once `agent_end` has been delivered to every listener.
 * - `steer()` and `followUp()` are accepted at any time. Steering is injected after the current
 *   turn (after its whole tool batch); a follow-up when the model would stop. Messages added while
 *   idle, or too late for the run's last poll, wait for the next run.
 * - A queued message is never lost nor doubled. What the loop takes from a queue it injects into
 *   the transcript, even if an abort or a failure lands right after the poll (the loop injects
 *   before it checks for the abort); what it has not taken stays queued, also after an error or an
 *   abort, until a later run takes it or `clear…()` hands it back.
 * - A listener that throws stops the run as `abort()` does (the run still ends well formed: an
 *   aborted turn, `turn_end`, `agent_end`); later listeners still get the event; `prompt()` then
 *   rejects with an `AgentListenerError`, and `state.errorMessage` names the listener's failure.
 */
import { runAgentLoop, runAgentLoopContinue } from "./agent-loop.js";
import { MessageQueue, checkMessage } from "./agent-queue.js";
import { AgentRun } from "./agent-run.js";
// #region ch11
import { SessionKeeper, checkStore } from "./agent-session.js";
// #endregion
import type { LoopStart, RunHost, Subscription } from "./agent-run.js";
import { NO_PENDING_CALLS, snapshotOf } from "./agent-state.js";
import type { AgentDraft } from "./agent-state.js";
import { AssistantMessageEventStream } from "../event-stream.js";
import { assistantMessage, userMessage } from "../messages.js";
import type { Model } from "../model.js";
import type { AgentMessage, AgentTool } from "../types.js";
import type {
  AgentListener,
  AgentLoopConfig,
  AgentOptions,
  // #region ch11
  AgentContextBudget,
  AgentSessionStore,
  // #endregion
  AgentState,
  QueueMode,
} from "./types.js";
// #region ch11
import type { ModelRouteEntry } from "../session/types.js";
// #endregion

export class Agent {
  private readonly draft: AgentDraft;
  private readonly hooks: Partial<AgentLoopConfig>;
  private readonly steering: MessageQueue;
  private readonly followUps: MessageQueue;
  /** Replaced, never mutated, so a delivery in progress keeps its list. */
  private subscriptions: readonly Subscription[] = [];
  private active: AgentRun | undefined;
  private readonly host: RunHost;
  private snapshot: AgentState | undefined;
  private frozenMessages: readonly AgentMessage[] | undefined;
  private readonly takeSteering = (): AgentMessage[] => this.steering.take();
  private readonly takeFollowUps = (): AgentMessage[] => this.followUps.take();
  // #region ch11
  private readonly keeper: SessionKeeper;
  // #endregion

  constructor(options: AgentOptions = {}) {
    const { initialState = {}, steeringMode, followUpMode, maxTurns, ...hooks } = options;
    if (maxTurns !== undefined && !(maxTurns === Infinity || (Number.isInteger(maxTurns) && maxTurns >= 1))) {
      throw new TypeError(`Agent: maxTurns must be a positive integer or Infinity, got ${maxTurns}.`);
    }
    this.hooks = maxTurns === undefined ? hooks : { ...hooks, maxTurns };
    this.steering = new MessageQueue(steeringMode);
    this.followUps = new MessageQueue(followUpMode);
    this.draft = {
      systemPrompt: undefined,
      model: NO_MODEL,
      tools: [],
      messages: [],
      isStreaming: false,
      streamingMessage: undefined,
      pendingToolCalls: NO_PENDING_CALLS,
      errorMessage: undefined,
    };
    this.host = {
      draft: this.draft,
      subscriptions: () => this.subscriptions,
      changed: (messages) => this.changed(messages),
      finished: (run) => {
        if (this.active === run) this.active = undefined;
      },
    };
    // #region ch11
    this.keeper = new SessionKeeper(this.host, options.contextBudget);
    // #endregion
    if (initialState.systemPrompt !== undefined) this.setSystemPrompt(initialState.systemPrompt);
    if (initialState.model !== undefined) this.setModel(initialState.model);
    if (initialState.tools !== undefined) this.setTools(initialState.tools);
    if (initialState.messages !== undefined) this.replaceMessages(initialState.messages);
    // #region ch11
    if (options.session !== undefined) {
      if (initialState.messages !== undefined) {
        throw new TypeError(
          "Agent: give either session (the transcript is read from it) or initialState.messages, not both.",
        );
      }
      this.setSession(options.session);
    } else if (this.keeper.active) this.setSession(undefined);
    // #endregion
  }

  /** A frozen snapshot of the state as of the last event (see `AgentState`). */
  get state(): AgentState {
    return (this.snapshot ??= snapshotOf(
      this.draft,
      (this.frozenMessages ??= Object.freeze(this.draft.messages.slice())),
    ));
  }

  /**
   * The tool hooks every run of this agent calls (`beforeToolCall`, `afterToolCall`,
   * `hookTimeoutMs`, as given to the constructor): for code that runs a call outside a run and
   * must keep the same rules, such as a recovery after a crash.
   */
  get toolHooks(): Pick<AgentLoopConfig, "beforeToolCall" | "afterToolCall" | "hookTimeoutMs"> {
    const { beforeToolCall, afterToolCall, hookTimeoutMs } = this.hooks;
    return {
      ...(beforeToolCall !== undefined && { beforeToolCall }),
      ...(afterToolCall !== undefined && { afterToolCall }),
      ...(hookTimeoutMs !== undefined && { hookTimeoutMs }),
    };
  }

  /** The active run's signal; undefined while idle. */
  get signal(): AbortSignal | undefined {
    return this.active?.controller.signal;
  }

  get steeringMode(): QueueMode {
    return this.steering.mode;
  }
  set steeringMode(mode: QueueMode) {
    this.steering.mode = mode;
  }
  get followUpMode(): QueueMode {
    return this.followUps.mode;
  }
  set followUpMode(mode: QueueMode) {
    this.followUps.mode = mode;
  }

  /** Sets the system prompt of the next run (a run in progress keeps its own). */
  setSystemPrompt(systemPrompt: string | undefined): void {
    if (systemPrompt !== undefined && typeof systemPrompt !== "string") {
      throw new TypeError("Agent.setSystemPrompt: expected a string (or undefined for none).");
    }
    this.draft.systemPrompt = systemPrompt;
    this.changed(false);
  }

  /** Sets the model of the next run. */
  setModel(model: Model): void {
    if (typeof model?.stream !== "function") {
      throw new TypeError("Agent.setModel: expected a Model (an object with a stream() method).");
    }
    this.draft.model = model;
    this.changed(false);
  }

  // #region ch11
  /**
   * Replaces the context budget of the next run (a new model has a new context window);
   * `undefined` removes it. Refused during a run; a malformed budget throws as in the constructor.
   */
  setContextBudget(budget: AgentContextBudget | undefined): void {
    this.refuseWhileRunning("setContextBudget()", "await agent.waitForIdle() first");
    this.keeper.setBudget(budget);
    const others = this.subscriptions.filter((entry) => entry !== this.keeper.subscription);
    this.subscriptions = this.keeper.active ? [this.keeper.subscription, ...others] : others;
  }

  /**
   * Records in the session which real model answers under a virtual model (a `model_route`
   * entry), on the agent's path just before the next message written: called while an answer
   * streams, it lands right before that answer. Allowed during a run; nothing without a session.
   * Whether the route changed is the caller's to decide (record it only when it does).
   */
  noteRoute(entry: Omit<ModelRouteEntry, "id" | "timestamp" | "parentId">): void {
    this.keeper.note(entry);
  }
  // #endregion

  /** Sets the tools of the next run; the array is copied. */
  setTools(tools: readonly AgentTool<any, any>[]): void {
    if (!Array.isArray(tools)) throw new TypeError("Agent.setTools: expected an array of tools.");
    this.draft.tools = tools.slice();
    this.changed(false);
  }

  /** Replaces the transcript with a copy of `messages`. Refused during a run, and while a session is attached. */
  replaceMessages(messages: readonly AgentMessage[]): void {
    this.refuseWhileRunning("replaceMessages()", "await agent.waitForIdle() first");
    // #region ch11
    this.refuseWithSession("replaceMessages()");
    // #endregion
    if (!Array.isArray(messages)) throw new TypeError("Agent.replaceMessages: expected an array of messages.");
    const copy = messages.map((m, i) => checkMessage(m, `Agent.replaceMessages: message ${i}`));
    this.draft.messages = copy;
    this.changed(true);
  }

  /** Adds a listener for every event of every run; returns the function that removes it. */
  subscribe(listener: AgentListener): () => void {
    if (typeof listener !== "function")
      throw new TypeError("Agent.subscribe: expected a function (event, signal) => ….");
    const entry: Subscription = { listener };
    this.subscriptions = [...this.subscriptions, entry];
    return () => {
      this.subscriptions = this.subscriptions.filter((e) => e !== entry);
    };
  }

  /** Starts a run with a text (as a user message), a message or messages. */
  async prompt(input: string | AgentMessage | readonly AgentMessage[]): Promise<void> {
    const prompts = toMessages(input, "Agent.prompt");
    if (prompts.length === 0) throw new TypeError("Agent.prompt: give at least one message (or a text).");
    this.refuseWhileRunning(
      "prompt()",
      "use steer() or followUp() to queue a message for it, or await waitForIdle() and prompt again",
    );
    // #region ch11
    this.keeper.refuseIfBroken("prompt()");
    // #endregion
    return this.run((context, config, sink, signal) => runAgentLoop(prompts, context, config, sink, signal));
  }

  /**
   * Resumes from the transcript. If it ends with an assistant message (failed turns aside), the
   * model has nothing to answer, so one poll of the steering queue (else of the follow-up queue)
   * starts the run; with both empty, `continue()` rejects.
   */
  async continue(): Promise<void> {
    this.refuseWhileRunning("continue()", "await waitForIdle() first");
    // #region ch11
    this.keeper.refuseIfBroken("continue()");
    // #endregion
    const tail = lastAnswerable(this.draft.messages);
    if (tail !== undefined && tail.role !== "assistant") {
      return this.run((context, config, sink, signal) => runAgentLoopContinue(context, config, sink, signal));
    }
    const batch = this.steering.size > 0 ? this.steering.take() : this.followUps.take();
    if (batch.length === 0) {
      throw new Error(
        tail === undefined
          ? "Agent.continue: the transcript is empty and no message is queued; use prompt()."
          : "Agent.continue: the transcript ends with an assistant message and no message is queued, so the " +
              "model has nothing to answer; use prompt(), or queue a message with steer()/followUp() first.",
      );
    }
    return this.run((context, config, sink, signal) => runAgentLoop(batch, context, config, sink, signal));
  }

  /** Resolves when no run is active (at once when idle). Never await it inside a listener. */
  waitForIdle(): Promise<void> {
    return this.active?.idle ?? Promise.resolve();
  }

  /** Queues a message to inject after the current turn's tool batch (or in the next run). */
  steer(message: string | AgentMessage): void {
    this.steering.push(toMessage(message, "Agent.steer"));
  }

  /** Queues a message to inject when the model would stop (or in the next run). */
  followUp(message: string | AgentMessage): void {
    this.followUps.push(toMessage(message, "Agent.followUp"));
  }

  /** Empties the steering queue; returns what it held. */
  clearSteering(): AgentMessage[] {
    return this.steering.clear();
  }

  /** Empties the follow-up queue; returns what it held. */
  clearFollowUps(): AgentMessage[] {
    return this.followUps.clear();
  }

  /** Empties both queues; returns what they held. */
  clearAllQueues(): { steering: AgentMessage[]; followUps: AgentMessage[] } {
    return { steering: this.clearSteering(), followUps: this.clearFollowUps() };
  }

  hasQueuedMessages(): boolean {
    return this.steering.size > 0 || this.followUps.size > 0;
  }

  /** The waiting messages of both queues, oldest first (copies; nothing is taken). */
  queuedMessages(): { steering: AgentMessage[]; followUps: AgentMessage[] } {
    return { steering: this.steering.peek(), followUps: this.followUps.peek() };
  }

  /** Stops the active run: no further model call, every started tool call answered. Idle, does nothing. */
  abort(): void {
    this.active?.controller.abort();
  }

  /** Clears the transcript, both queues and the error; keeps prompt, model and tools. Refused during a run, and while a session is attached. */
  reset(): void {
    this.refuseWhileRunning("reset()", "abort() it and await waitForIdle() first");
    // #region ch11
    this.refuseWithSession("reset()");
    // #endregion
    this.steering.clear();
    this.followUps.clear();
    Object.assign(this.draft, {
      messages: [],
      streamingMessage: undefined,
      pendingToolCalls: NO_PENDING_CALLS,
      errorMessage: undefined,
    });
    this.changed(true);
  }

  // #region ch11
  /** The attached session (see `AgentSessionStore`), if any. */
  get session(): AgentSessionStore | undefined {
    return this.keeper.session;
  }

  /**
   * Attaches a session: the transcript becomes its path to `leafId` (default: its leaf), from
   * the newest compaction's summary on; every message of later runs is appended to it. With
   * `undefined`, stops recording and keeps the transcript as it is (`reset()` clears it).
   * Also clears a write failure (see `SessionWriteError`). Refused during a run.
   */
  setSession(session: AgentSessionStore | undefined, options: { leafId?: string } = {}): void {
    this.refuseWhileRunning("setSession()", "await agent.waitForIdle() first");
    checkStore(session);
    this.keeper.attach(session, options.leafId);
    const others = this.subscriptions.filter((entry) => entry !== this.keeper.subscription);
    this.subscriptions = this.keeper.active ? [this.keeper.subscription, ...others] : others;
  }

  private refuseWithSession(what: string): void {
    if (this.keeper.session !== undefined) {
      throw new Error(
        `Agent.${what} is refused while a session is attached (the transcript is the session's): ` +
          "call agent.setSession(another session, or undefined) first.",
      );
    }
  }
  // #endregion

  /** Starts a run: the agent is busy from here until the run's promise settles. */
  private run(start: LoopStart): Promise<void> {
    const run = new AgentRun(this.host);
    this.active = run;
    const config: AgentLoopConfig = {
      ...this.hooks,
      model: this.draft.model,
      getSteeringMessages: this.takeSteering,
      getFollowUpMessages: this.takeFollowUps,
    };
    // #region ch11
    if (this.keeper.active) return this.keeper.execute(run, start, config);
    // #endregion
    return run.execute(start, config);
  }

  /** Drops the cached snapshot (and the frozen transcript when it changed). */
  private changed(messages: boolean): void {
    this.snapshot = undefined;
    if (messages) this.frozenMessages = undefined;
  }

  private refuseWhileRunning(what: string, instead: string): void {
    if (this.active !== undefined)
      throw new Error(`Agent is busy: a run is active, so ${what} is refused; ${instead}.`);
  }
}

/** The last message the model would see (error/aborted assistant turns are skipped), if any. */
function lastAnswerable(messages: readonly AgentMessage[]): AgentMessage | undefined {
  for (let k = messages.length - 1; k >= 0; k--) {
    const m = messages[k]!;
    if (m.role !== "assistant" || (m.stopReason !== "error" && m.stopReason !== "aborted")) return m;
  }
  return undefined;
}

function toMessage(input: string | AgentMessage, where: string): AgentMessage {
  return typeof input === "string" ? userMessage(input) : checkMessage(input, where);
}

function toMessages(input: string | AgentMessage | readonly AgentMessage[], where: string): AgentMessage[] {
  if (Array.isArray(input)) return input.map((m, i) => checkMessage(m, `${where}: message ${i}`));
  return [toMessage(input as string | AgentMessage, where)];
}

/** The model of an agent given none: every run ends at once with an error that says what to do. */
const NO_MODEL: Model = {
  provider: "none",
  id: "none",
  stream() {
    const stream = new AssistantMessageEventStream();
    const error = assistantMessage([], "error", {
      provider: "none",
      model: "none",
      errorMessage: "This agent has no model: pass initialState.model to new Agent(…), or call agent.setModel(model).",
    });
    stream.push({ type: "error", reason: "error", error });
    return stream;
  },
};
