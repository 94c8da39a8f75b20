/**
 * The state of one agent-loop run: its transcript (a copy of the caller's), the messages it
 * added, the event sequence kept well formed (nothing after `agent_end`, `agent_start` first),
 * and the model's view of the transcript. The run applies the guards (guards.ts) to the user's
 * config and sink as it starts, so the loop can call them under their contracts.
 */
import { guardContextHooks, guardQueues, guardSink, guardToolHooks } from "./guards.js";
import type { GuardedSink, GuardedToolHooks, QueuePoll } from "./guards.js";
import type { AgentEventSink, ToolBatchRun } from "./tool-execution.js";
import { messageOf, toToolDefinition } from "./tools.js";
import { BUILT_IN_MIDDLEWARE } from "./tool-middleware.js";
import type {
  AgentContext,
  AgentMessage,
  AssistantMessage,
  Context,
  Message,
  ToolDefinition,
  ToolResultMessage,
} from "../types.js";
import type { AgentEvent, AgentLoopConfig, ToolMiddleware } from "./types.js";

/**
 * Keeps the three canonical roles and drops every other (custom) message, and every error or
 * aborted assistant message: a failed turn is not part of the conversation the model continues
 * (its tool calls were never run nor answered), as on the wire.
 */
export function defaultConvertToLlm(messages: AgentMessage[]): Message[] {
  return messages.filter(
    (m) =>
      m.role === "user" ||
      m.role === "toolResult" ||
      (m.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted"),
  ) as Message[];
}

/** One run: the transcript, the events, and the state that keeps the sequence well formed. */
export class LoopRun implements ToolBatchRun {
  readonly context: AgentContext;
  readonly emit: AgentEventSink;
  /** Messages added by this run, in order: the result. */
  readonly added: AgentMessage[] = [];
  /** Model turns taken so far. */
  turns = 0;
  /** This turn's calls whose id repeated an earlier call's (fresh id → repeated id); see `ToolBatchRun`. */
  repeatedCalls: ReadonlyMap<string, string> | undefined;
  /** The hooks the built-in features add to this run's tool batches (`BUILT_IN_MIDDLEWARE`). */
  middleware: readonly ToolMiddleware[];
  /** The config's tool hooks, guarded. */
  readonly hooks: GuardedToolHooks;
  /** The queue getters, guarded: the messages they give, or the text the run ends with. */
  readonly steering: QueuePoll;
  readonly followUps: QueuePoll;
  private readonly transcript: AgentMessage[];
  private tools: ToolDefinition[] | undefined;
  private turnOpen = false;
  private started = false;
  private ended = false;
  private readonly sink: GuardedSink;
  private readonly modelMessages: (transcript: AgentMessage[]) => Promise<Message[]>;

  constructor(
    context: AgentContext,
    readonly config: AgentLoopConfig,
    sink: AgentEventSink,
    readonly signal: AbortSignal | undefined,
  ) {
    this.transcript = [...context.messages];
    this.context = { ...context, messages: this.transcript };
    this.middleware = BUILT_IN_MIDDLEWARE.map((make) => make(this.context));
    this.tools = this.declaredTools();
    this.sink = guardSink(sink, signal);
    this.hooks = guardToolHooks(config, signal);
    ({ steering: this.steering, followUps: this.followUps } = guardQueues(config, signal));
    this.modelMessages = guardContextHooks(config, signal, defaultConvertToLlm);
    this.emit = (event) => this.deliver(event);
  }

  /** The definitions of the tools every middleware declares to the model, or `undefined` for none. */
  private declaredTools(): ToolDefinition[] | undefined {
    const tools = (this.context.tools ?? []).filter((tool) =>
      this.middleware.every((m) => m.declares?.(tool) !== false),
    );
    return tools.length > 0 ? tools.map(toToolDefinition) : undefined;
  }

  /**
   * Takes the tools `config.currentTools` gives when they are another array than the run's (tools
   * joined or left; before each request, after each answer, before each result): the middleware
   * is made again from the context, so the declared set is worked
   * out from the transcript so far. Throws `currentTools failed: …` when the hook throws or gives
   * no array (the run's tools stay).
   */
  syncTools(): void {
    const read = this.config.currentTools;
    if (read === undefined) return;
    let tools: unknown;
    try {
      tools = read();
    } catch (error) {
      throw new Error(`currentTools failed: ${messageOf(error)}`);
    }
    if (!Array.isArray(tools))
      throw new Error(`currentTools failed: it returned ${typeof tools}, not an array of tools`);
    if (tools === this.context.tools) return;
    this.context.tools = tools;
    this.middleware = BUILT_IN_MIDDLEWARE.map((make) => make(this.context));
    this.tools = this.declaredTools();
  }

  /** Records a batch's results, already reported by the batch, and lets the middleware see them. */
  recordResults(results: readonly ToolResultMessage[]): void {
    for (const result of results) {
      this.transcript.push(result);
      this.added.push(result);
    }
    let changed = false;
    for (const m of this.middleware) if (m.afterBatch?.(results) === true) changed = true;
    if (changed) this.tools = this.declaredTools();
  }

  /** Runs the loop; never rejects, except to report a sink failure after the run ended. */
  async run(
    pending: AgentMessage[],
    loop: (run: LoopRun, pending: AgentMessage[]) => Promise<void>,
  ): Promise<AgentMessage[]> {
    try {
      await loop(this, pending);
    } catch (error) {
      // A bug, not a scripted failure: still end the run in a well-formed way.
      await this.fail(`The agent loop failed: ${messageOf(error)}`);
    }
    if (!this.ended) await this.finish();
    if (this.sink.failure !== undefined) throw this.sink.failure.error;
    return this.added;
  }

  /** Delivers one event to the (guarded) sink; nothing after `agent_end`. */
  private deliver(event: AgentEvent): void | Promise<void> {
    if (this.ended) return;
    if (event.type === "agent_start") this.started = true;
    else if (event.type === "agent_end") this.ended = true;
    else if (event.type === "turn_start") this.turnOpen = true;
    else if (event.type === "turn_end") this.turnOpen = false;
    return this.sink.emit(event);
  }

  /**
   * Adds a message to the transcript and reports it. Like `endTurn`, returns the
   * sink's promise if there is one, and else nothing: no promise, no microtask per event.
   */
  add(message: AgentMessage): void | Promise<void> {
    this.transcript.push(message);
    this.added.push(message);
    const started = this.emit({ type: "message_start", message });
    if (started !== undefined) return started.then(() => this.emit({ type: "message_end", message }));
    return this.emit({ type: "message_end", message });
  }

  /** An assistant message saying what went wrong, made by the loop (no model was called). */
  failure(stopReason: "error" | "aborted", errorMessage: string): AssistantMessage {
    const message: AssistantMessage = {
      role: "assistant",
      content: [],
      provider: this.config.model.provider,
      model: this.config.model.id,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason,
      errorMessage,
      timestamp: Date.now(),
    };
    // The same details as a provider's own abort, whatever stopped the turn (agent.abort(), a signal).
    if (stopReason === "aborted") message.errorDetails = { kind: "aborted", retryable: false };
    return message;
  }

  /**
   * Records a finished assistant message (its events already emitted), and takes the tools as
   * they are now (`syncTools`), so its calls find a tool that joined while it was delivered.
   */
  record(message: AssistantMessage): void {
    this.transcript.push(message);
    this.added.push(message);
    try {
      this.syncTools();
    } catch {
      // the run keeps its tools; the next request reports the hook's failure
    }
  }

  endTurn(message: AssistantMessage, toolResults: ToolResultMessage[]): void | Promise<void> {
    return this.emit({ type: "turn_end", message, toolResults });
  }

  /**
   * Ends the run (`agent_start` first if the loop never sent it). `errorMessage` is for a stop
   * that no message records (the turn limit): it goes on `agent_end`.
   */
  async finish(errorMessage?: string): Promise<void> {
    if (!this.started) await this.emit({ type: "agent_start" });
    await this.emit({ type: "agent_end", messages: this.added, ...(errorMessage !== undefined && { errorMessage }) });
  }

  /**
   * Ends the run with an error assistant message in a turn of its own (or the open one), after
   * an `agent_start` if the loop failed before sending it.
   */
  async fail(errorMessage: string): Promise<void> {
    if (this.ended) return;
    if (!this.started) await this.emit({ type: "agent_start" });
    if (!this.turnOpen) await this.emit({ type: "turn_start" });
    const message = this.failure("error", errorMessage);
    await this.add(message);
    await this.endTurn(message, []);
    await this.finish();
  }

  /**
   * The model's view of the transcript for one turn: the tools as they are now (`syncTools`),
   * `transformContext`, then `convertToLlm` (guarded: see `guardContextHooks`). Throws
   * `<hook> failed: …` when a hook failed, or was
   * not waited for after an abort (the caller checks the signal).
   */
  async modelContext(): Promise<Context> {
    this.syncTools();
    const context: Context = { messages: await this.modelMessages(this.transcript) };
    if (this.context.systemPrompt !== undefined) context.systemPrompt = this.context.systemPrompt;
    if (this.tools !== undefined) context.tools = this.tools;
    return context;
  }
}
