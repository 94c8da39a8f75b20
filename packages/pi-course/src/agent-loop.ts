/**
 * The agent loop: prompt → model turn → tool batch → model turn … until the model stops, and
 * every step reported as an `AgentEvent`.
 *
 *   agent_start
 *     turn_start  (injected messages)  assistant message  (tool batch)  turn_end
 *     turn_start  …                                                     turn_end
 *   agent_end
 *
 * Errors are data: whatever throws (the model, `convertToLlm`, `transformContext`, a hook, a
 * queue getter) the run still ends with a well-formed sequence: an error assistant message,
 * `turn_end`, `agent_end`. `result()` always settles, and after an abort no model is called.
 */
import { EventStream } from "./event-stream.js";
import { executeToolBatch, refuseTruncatedCalls } from "./tool-execution.js";
import type { AgentEventSink, ToolBatchRun } from "./tool-execution.js";
import { toToolDefinition } from "./tools.js";
import type {
  AgentContext,
  AgentEvent,
  AgentEventStream,
  AgentLoopConfig,
  AgentMessage,
  AssistantMessage,
  Context,
  Message,
  ToolCall,
  ToolDefinition,
  ToolResultMessage,
} from "./types.js";

/** The most model turns one run takes when `maxTurns` is not set. */
export const DEFAULT_MAX_TURNS = 50;

/**
 * Starts a run with new prompt messages: they are added to the transcript (and reported as
 * messages) before the first model turn. The stream's result is every message the run added,
 * prompts included. `context` is not changed.
 */
export function agentLoop(
  prompts: AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  signal?: AbortSignal,
): AgentEventStream {
  if (!Array.isArray(prompts)) throw new TypeError("agentLoop: prompts must be an array of messages.");
  return streamOf((sink) => runAgentLoop(prompts, context, config, sink, signal));
}

/**
 * Continues a run from the transcript as it stands (e.g. after an error, or with tool results
 * already present), without new prompts. Throws if the transcript is empty or ends with an
 * assistant message: there would be nothing for the model to answer.
 */
export function agentLoopContinue(
  context: AgentContext,
  config: AgentLoopConfig,
  signal?: AbortSignal,
): AgentEventStream {
  checkContinuable(context);
  return streamOf((sink) => runAgentLoopContinue(context, config, sink, signal));
}

/**
 * `agentLoop` with a sink instead of a stream (for an owner that awaits its subscribers).
 * Resolves with the new messages once `agent_end` has been delivered; rejects only if the sink
 * threw, and then after the run has ended.
 */
export function runAgentLoop(
  prompts: AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  sink: AgentEventSink,
  signal?: AbortSignal,
): Promise<AgentMessage[]> {
  checkConfig(config);
  return new LoopRun(context, config, sink, signal).run([...prompts]);
}

/** `agentLoopContinue` with a sink instead of a stream; see `runAgentLoop`. */
export function runAgentLoopContinue(
  context: AgentContext,
  config: AgentLoopConfig,
  sink: AgentEventSink,
  signal?: AbortSignal,
): Promise<AgentMessage[]> {
  checkConfig(config);
  checkContinuable(context);
  return new LoopRun(context, config, sink, signal).run([]);
}

/** Keeps the three canonical roles and drops every other (custom) message. */
export function defaultConvertToLlm(messages: AgentMessage[]): Message[] {
  return messages.filter(
    (m) => m.role === "user" || m.role === "assistant" || m.role === "toolResult",
  ) as Message[];
}

/** One run: the transcript, the events, and the state that keeps the sequence well formed. */
class LoopRun implements ToolBatchRun {
  readonly context: AgentContext;
  readonly emit: AgentEventSink;
  /** Messages added by this run, in order: the result. */
  readonly added: AgentMessage[] = [];
  /** Model turns taken so far. */
  turns = 0;
  private readonly transcript: AgentMessage[];
  private readonly tools: ToolDefinition[] | undefined;
  private turnOpen = false;
  private ended = false;
  private sinkFailure: { error: unknown } | undefined;

  constructor(
    context: AgentContext,
    readonly config: AgentLoopConfig,
    private readonly sink: AgentEventSink,
    readonly signal: AbortSignal | undefined,
  ) {
    this.transcript = [...context.messages];
    this.context = { ...context, messages: this.transcript };
    const tools = context.tools ?? [];
    this.tools = tools.length > 0 ? tools.map(toToolDefinition) : undefined;
    this.emit = (event) => this.deliver(event);
  }

  /** Runs the loop; never rejects, except to report a sink failure after the run ended. */
  async run(pending: AgentMessage[]): Promise<AgentMessage[]> {
    try {
      await runLoop(this, pending);
    } catch (error) {
      // A bug, not a scripted failure: still end the run in a well-formed way.
      await this.fail(`The agent loop failed: ${messageOf(error)}`);
    }
    if (!this.ended) await this.finish();
    if (this.sinkFailure !== undefined) throw this.sinkFailure.error;
    return this.added;
  }

  /** Delivers one event to the sink; nothing after `agent_end`; sink errors are kept for later. */
  private deliver(event: AgentEvent): void | Promise<void> {
    if (this.ended) return;
    if (event.type === "agent_end") this.ended = true;
    else if (event.type === "turn_start") this.turnOpen = true;
    else if (event.type === "turn_end") this.turnOpen = false;
    try {
      const delivered = this.sink(event);
      if (delivered !== undefined && typeof delivered.then === "function") {
        return delivered.then(undefined, (error: unknown) => {
          this.sinkFailure ??= { error };
        });
      }
    } catch (error) {
      this.sinkFailure ??= { error };
    }
  }

  /** Adds a message to the transcript and reports it. */
  async add(message: AgentMessage): Promise<void> {
    this.transcript.push(message);
    this.added.push(message);
    await this.emit({ type: "message_start", message });
    await this.emit({ type: "message_end", message });
  }

  /** An assistant message saying what went wrong, made by the loop (no model was called). */
  failure(stopReason: "error" | "aborted", errorMessage: string): AssistantMessage {
    return {
      role: "assistant",
      content: [],
      provider: this.config.model.provider,
      model: this.config.model.id,
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason,
      errorMessage,
      timestamp: Date.now(),
    };
  }

  /** Records a finished assistant message (its events already emitted). */
  record(message: AssistantMessage): void {
    this.transcript.push(message);
    this.added.push(message);
  }

  /** Records tool results, already reported by the batch. */
  recordResults(results: readonly ToolResultMessage[]): void {
    for (const result of results) {
      this.transcript.push(result);
      this.added.push(result);
    }
  }

  async endTurn(message: AssistantMessage, toolResults: ToolResultMessage[]): Promise<void> {
    await this.emit({ type: "turn_end", message, toolResults });
  }

  async finish(): Promise<void> {
    await this.emit({ type: "agent_end", messages: this.added });
  }

  /** Ends the run with an error assistant message in a turn of its own (or the open one). */
  async fail(errorMessage: string): Promise<void> {
    if (this.ended) return;
    if (!this.turnOpen) await this.emit({ type: "turn_start" });
    const message = this.failure("error", errorMessage);
    await this.add(message);
    await this.endTurn(message, []);
    await this.finish();
  }

  /** The model's view of the transcript for one turn. Throws what the hooks throw. */
  async modelContext(): Promise<Context> {
    const { transformContext, convertToLlm = defaultConvertToLlm } = this.config;
    let messages: AgentMessage[] = this.transcript;
    if (transformContext !== undefined) {
      messages = await describeThrow("transformContext", () => transformContext(this.transcript.slice(), this.signal));
      if (!Array.isArray(messages)) throw new TypeError("transformContext must return an array of messages");
    }
    const llm = await describeThrow("convertToLlm", () => convertToLlm(messages));
    if (!Array.isArray(llm)) throw new TypeError("convertToLlm must return an array of messages");
    const context: Context = { messages: llm };
    if (this.context.systemPrompt !== undefined) context.systemPrompt = this.context.systemPrompt;
    if (this.tools !== undefined) context.tools = this.tools;
    return context;
  }
}

/** The loop proper: turns until the model stops, the batch terminates, an error or an abort. */
async function runLoop(run: LoopRun, pending: AgentMessage[]): Promise<void> {
  // #region lab 7.2 runLoop
  const maxTurns = run.config.maxTurns ?? DEFAULT_MAX_TURNS;
  await run.emit({ type: "agent_start" });
  for (;;) {
    await run.emit({ type: "turn_start" });
    for (const message of pending) await run.add(message);
    pending = [];
    let message: AssistantMessage;
    if (run.turns >= maxTurns) {
      message = run.failure(
        "error",
        `Turn limit reached: this run made ${run.turns} model calls (maxTurns = ${maxTurns}). ` +
          `Raise maxTurns in the loop config, or continue the run with agentLoopContinue.`,
      );
      await run.add(message);
    } else if (run.signal?.aborted) {
      message = run.failure("aborted", "The run was aborted before the model was called.");
      await run.add(message);
    } else {
      run.turns++;
      message = await streamAssistantMessage(run);
    }
    if (message.stopReason === "error" || message.stopReason === "aborted") {
      await run.endTurn(message, []);
      return run.finish();
    }
    const calls = message.content.filter((block): block is ToolCall => block.type === "toolCall");
    let results: ToolResultMessage[] = [];
    let terminate = false;
    if (calls.length > 0) {
      if (message.stopReason === "length") {
        results = await refuseTruncatedCalls(run, calls);
      } else {
        ({ results, terminate } = await executeToolBatch(run, message, calls));
      }
      run.recordResults(results);
    }
    await run.endTurn(message, results);
    if (run.signal?.aborted || terminate) return run.finish();
    const steering = await poll(run, "getSteeringMessages");
    if (steering === undefined) return;
    if (steering.length > 0 || calls.length > 0) {
      pending = steering;
      continue;
    }
    const followUps = await poll(run, "getFollowUpMessages");
    if (followUps === undefined) return;
    if (followUps.length === 0) return run.finish();
    pending = followUps;
  }
  // #endregion
}

/**
 * Asks the model for one turn and reports it as message_start, message_update…, message_end.
 * Never throws: a failure before or during the turn is an error assistant message.
 */
async function streamAssistantMessage(run: LoopRun): Promise<AssistantMessage> {
  // #region lab 7.1 streamAssistantMessage
  let context: Context;
  try {
    context = await run.modelContext();
  } catch (error) {
    return reportFailure(run, undefined, messageOf(error));
  }
  if (run.signal?.aborted) {
    return reportFailure(run, undefined, "The run was aborted before the model was called.", "aborted");
  }
  let started: AssistantMessage | undefined;
  try {
    const stream = run.config.model.stream(context, { signal: run.signal });
    for await (const event of stream) {
      if (event.type === "done" || event.type === "error") {
        return reportFinal(run, started, event.type === "done" ? event.message : event.error);
      }
      if (started === undefined) {
        started = event.partial;
        await run.emit({ type: "message_start", message: started });
      }
      if (event.type !== "start") {
        const emitted = run.emit({ type: "message_update", message: event.partial, event });
        if (emitted !== undefined) await emitted;
      }
    }
    return reportFinal(run, started, await stream.result());
  } catch (error) {
    return reportFailure(run, started, `The model failed: ${messageOf(error)}`);
  }
  // #endregion
}

/** Reports the model's final message (message_start first if none was sent) and records it. */
async function reportFinal(
  run: LoopRun,
  started: AssistantMessage | undefined,
  message: AssistantMessage,
): Promise<AssistantMessage> {
  if (typeof message !== "object" || message === null || message.role !== "assistant") {
    return reportFailure(run, started, "The model ended its turn without an assistant message.");
  }
  if (started === undefined) await run.emit({ type: "message_start", message });
  await run.emit({ type: "message_end", message });
  run.record(message);
  return message;
}

/** Ends the turn's message as a failure, keeping what the model had streamed so far. */
async function reportFailure(
  run: LoopRun,
  started: AssistantMessage | undefined,
  errorMessage: string,
  stopReason: "error" | "aborted" = "error",
): Promise<AssistantMessage> {
  const message = run.failure(stopReason, errorMessage);
  if (started !== undefined) {
    try {
      message.content = structuredClone(started.content);
    } catch {
      // keep no content rather than a half-copied one
    }
  }
  return reportFinal(run, started, message);
}

/** Polls a queue getter; on a throw, ends the run (and returns undefined). */
async function poll(
  run: LoopRun,
  name: "getSteeringMessages" | "getFollowUpMessages",
): Promise<AgentMessage[] | undefined> {
  const getter = run.config[name];
  if (getter === undefined) return [];
  try {
    const messages = await getter();
    if (messages === undefined || messages === null) return [];
    if (!Array.isArray(messages)) throw new TypeError("it must return an array of messages");
    return messages;
  } catch (error) {
    await run.fail(`${name} failed: ${messageOf(error)}`);
    return undefined;
  }
}

async function describeThrow<T>(name: string, work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new Error(`${name} failed: ${messageOf(error)}`);
  }
}

/** Wraps a sink-based run as an `EventStream`. */
function streamOf(start: (sink: AgentEventSink) => Promise<AgentMessage[]>): AgentEventStream {
  const stream: AgentEventStream = new EventStream<AgentEvent, AgentMessage[]>(
    (event) => event.type === "agent_end",
    (event) => (event.type === "agent_end" ? event.messages : []),
  );
  start((event) => stream.push(event)).then(
    (messages) => stream.end(messages),
    () => stream.end([]),
  );
  return stream;
}

function checkConfig(config: AgentLoopConfig): void {
  if (typeof config?.model?.stream !== "function") {
    throw new TypeError("agentLoop: config.model must be a Model (an object with a stream() method).");
  }
  const max = config.maxTurns;
  if (max !== undefined && !(max === Infinity || (Number.isInteger(max) && max >= 1))) {
    throw new TypeError(`agentLoop: maxTurns must be a positive integer or Infinity, got ${max}.`);
  }
}

function checkContinuable(context: AgentContext): void {
  const last = context.messages.at(-1);
  if (last === undefined) {
    throw new Error("agentLoopContinue: the transcript is empty; start a run with agentLoop(prompts, …).");
  }
  if (last.role === "assistant") {
    throw new Error(
      "agentLoopContinue: the transcript ends with an assistant message, so the model has nothing " +
        "to answer. Add a user message (agentLoop) or the missing tool results first.",
    );
  }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
