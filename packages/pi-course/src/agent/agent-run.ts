/**
 * One run of an `Agent`, from `prompt()`/`continue()` to the moment its promise settles: the
 * run's abort controller, the delivery of every loop event (state first, then each listener in
 * turn), and the listener failures it collects.
 *
 *   start: isStreaming, error cleared → the loop, every event delivered → agent_end delivered
 *   → idle again (isStreaming false, waitForIdle() resolved) → prompt() resolves, or rejects
 *     with an AgentListenerError if a listener threw
 *
 * Whatever happens inside, the agent is idle again when the run's promise settles.
 */
import { NO_PENDING_CALLS, reduceAgentEvent } from "./agent-state.js";
import type { AgentDraft } from "./agent-state.js";
import type { AgentEventSink } from "./tool-execution.js";
import { messageOf } from "./tools.js";
import type { AgentContext, AgentMessage } from "../types.js";
import type { AgentEvent, AgentListener, AgentLoopConfig } from "./types.js";
import { PiCourseError } from "../base/errors.js";

/** One listener failure: the event it was given, and what it threw. */
export interface ListenerFailure {
  event: AgentEvent["type"];
  error: unknown;
}

/** `prompt()`/`continue()` rejects with this, once the run has ended, when a listener threw. */
export class AgentListenerError extends PiCourseError {
  override name = "AgentListenerError";
  /** Stable: `"AGENT_LISTENER"`. */
  override readonly code = "AGENT_LISTENER";
  constructor(readonly failures: readonly ListenerFailure[]) {
    const first = failures[0]!;
    const more = failures.length > 1 ? ` (and ${failures.length - 1} more listener failure(s))` : "";
    super(
      `A listener threw on "${first.event}": ${messageOf(first.error)}${more}. The run was stopped and ` +
        `ended cleanly; fix the listener, or catch inside it what it may throw.`,
      { cause: first.error },
    );
  }
}

/** A subscription: its own object, so the same function subscribed twice is two entries. */
export interface Subscription {
  readonly listener: AgentListener;
}

/** What a run needs from its agent. */
export interface RunHost {
  readonly draft: AgentDraft;
  /** The current subscriptions (a list that is replaced, never mutated). */
  subscriptions(): readonly Subscription[];
  /** The state changed (and the transcript too, if `messages`). */
  changed(messages: boolean): void;
  /** The run is over: the agent is no longer busy with it. Called before `idle` resolves. */
  finished(run: AgentRun): void;
}

/** Starts the loop of one run with the agent's context, config, event sink and the run's signal. */
export type LoopStart = (
  context: AgentContext,
  config: AgentLoopConfig,
  sink: AgentEventSink,
  signal: AbortSignal,
) => Promise<AgentMessage[]>;

export class AgentRun {
  readonly controller = new AbortController();
  /** Resolves when the run is over and the agent idle. Never rejects. */
  readonly idle: Promise<void>;
  readonly failures: ListenerFailure[] = [];
  private settle!: () => void;

  constructor(private readonly host: RunHost) {
    this.idle = new Promise<void>((resolve) => (this.settle = resolve));
  }

  /** Runs the loop to its end; see the file comment. Rejects only after the agent is idle again. */
  async execute(start: LoopStart, config: AgentLoopConfig): Promise<void> {
    // #region lab 9.3 AgentRun.execute
    const draft = this.host.draft;
    draft.isStreaming = true;
    draft.streamingMessage = undefined;
    draft.errorMessage = undefined;
    this.host.changed(false);
    // no copy needed: the loop copies the transcript when it starts, before its first event
    const context: AgentContext = { systemPrompt: draft.systemPrompt, messages: draft.messages, tools: draft.tools };
    let failure: Error | undefined;
    try {
      await start(context, config, (event) => this.inOrder(event), this.controller.signal);
      await this.delivered;
    } catch (error) {
      // the sink never throws, so this is a bug in the loop: still leave the agent idle
      failure = error instanceof Error ? error : new Error(messageOf(error));
      draft.pendingToolCalls = NO_PENDING_CALLS;
    } finally {
      if (failure === undefined && this.failures.length > 0) failure = new AgentListenerError(this.failures);
      if (failure !== undefined) draft.errorMessage = failure.message;
      draft.isStreaming = false;
      draft.streamingMessage = undefined;
      this.host.changed(false);
      this.host.finished(this);
      this.settle();
    }
    if (failure !== undefined) throw failure;
    // #endregion
  }

  /**
   * The sink the loop is given: `deliver`, one event after the other. The loop awaits each
   * delivery until the run is aborted; after that it no longer waits, so a delivery still
   * awaiting a slow listener gets the next events queued behind it: every listener still sees
   * every event, in order, and the run ends once `agent_end` has been delivered.
   */
  private inOrder(event: AgentEvent): void | Promise<void> {
    const before = this.delivered;
    const returned = before === undefined ? this.deliver(event) : before.then(() => this.deliver(event));
    if (returned === undefined) return;
    const tail: Promise<void> = returned.then(() => {
      if (this.delivered === tail) this.delivered = undefined;
    });
    this.delivered = tail;
    return tail;
  }

  /** The delivery still in progress, if any (see `inOrder`). */
  private delivered: Promise<void> | undefined;

  /**
   * Reduces one event into the state, then hands it to each listener in turn (awaiting those
   * that return a promise). Never throws: a listener's throw is recorded and stops the run.
   */
  deliver(event: AgentEvent): void | Promise<void> {
    // #region lab 9.3 AgentRun.deliver
    if (!reduceAgentEvent(this.host.draft, event)) return;
    this.host.changed(event.type === "message_end");
    const subscriptions = this.host.subscriptions();
    for (let i = 0; i < subscriptions.length; i++) {
      let returned: unknown;
      try {
        returned = subscriptions[i]!.listener(event, this.controller.signal);
      } catch (error) {
        this.listenerFailed(event, error);
        continue;
      }
      if (isPromiseLike(returned)) return this.deliverRest(event, subscriptions, i, returned);
    }
    // #endregion
  }

  /** `deliver` once a listener returned a promise: await it, then the listeners after it. */
  private async deliverRest(
    event: AgentEvent,
    subscriptions: readonly Subscription[],
    index: number,
    pending: PromiseLike<unknown>,
  ): Promise<void> {
    try {
      await pending;
    } catch (error) {
      this.listenerFailed(event, error);
    }
    for (let i = index + 1; i < subscriptions.length; i++) {
      try {
        await subscriptions[i]!.listener(event, this.controller.signal);
      } catch (error) {
        this.listenerFailed(event, error);
      }
    }
  }

  /** Records a listener's failure and stops the run as `abort()` would. */
  private listenerFailed(event: AgentEvent, error: unknown): void {
    this.failures.push({ event: event.type, error });
    if (!this.controller.signal.aborted) this.controller.abort(new AgentListenerError(this.failures));
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === "function";
}
