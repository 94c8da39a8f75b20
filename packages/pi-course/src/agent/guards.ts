/**
 * The guards: everything that stands between the loop and user code that breaks its contract.
 *
 * The loop (agent-loop.ts, loop-run.ts, tool-execution.ts) calls the user's code under the
 * contracts stated on `AgentLoopConfig`, `AgentTool` and `Model`, and trusts the answers. What
 * if the code does not keep them (throws where it may not, never settles, answers with the wrong
 * shape, a Proxy, getters that throw, two calls under one id)? Each such case is handled here,
 * once, by a named guard that wraps the user's piece and gives the loop something it can trust:
 *
 * - `checkLoopConfig`: the config's values (a model, `maxTurns`, `hookTimeoutMs`) before a run;
 * - `guardSink`: the event sink (a throw is kept for after the run; not waited for after an abort);
 * - `guardContextHooks`: `transformContext` → `convertToLlm` (copies in, arrays out, named failures);
 * - `guardQueues`: the queue getters (an array of messages, or the text of their failure);
 * - `openModelStream`, `checkedPartial`, `checkedFinal`, `partialContent`: the model's stream and
 *   messages (stop waiting on abort, refuse a malformed message, unique call ids);
 * - `runGuardedTool`: a tool's `execute` and its result (read once, as plain data);
 * - `guardToolHooks`: `beforeToolCall`/`afterToolCall` (an answer read once, `hookTimeoutMs`, an abort).
 *
 * Chapter 07's labs use the guards as given, except the last: Lab 7.4 writes the guard of the
 * tool hooks (`guardToolHooks`), the one guard a learner builds from `settle` and a reader.
 *
 * Under all of them is `settle` (settle.ts): it awaits user code without letting it hold the run.
 * The readers are total: whatever they are given they return a value or say what is wrong, and
 * never throw. The loop applies the guards itself (`LoopRun` wraps its config and sink), so every
 * run has them: `agentLoop`'s and the `Agent`'s alike.
 */
import { settle } from "./settle.js";
import { MAX_TIMER_MS } from "../base/timer.js";
import type { Settled } from "./settle.js";
import { messageOf } from "./tools.js";
import type {
  AgentMessage,
  AgentToolResult,
  AssistantMessage,
  Context,
  Message,
  ModelEvent,
  TextContent,
  ToolCall,
} from "../types.js";
import type { Model } from "../model.js";
import type {
  AfterToolCallContext,
  AfterToolCallResult,
  AgentEvent,
  AgentLoopConfig,
  BeforeToolCallContext,
} from "./types.js";

// ---------------------------------------------------------------------------------------------
// The config and the sink
// ---------------------------------------------------------------------------------------------

/** Refuses a config the loop cannot run with, saying what to change. */
export function checkLoopConfig(config: AgentLoopConfig): void {
  if (typeof config?.model?.stream !== "function") {
    throw new TypeError("agentLoop: config.model must be a Model (an object with a stream() method).");
  }
  const max = config.maxTurns;
  if (max !== undefined && !(max === Infinity || (Number.isInteger(max) && max >= 1))) {
    throw new TypeError(`agentLoop: maxTurns must be a positive integer or Infinity, got ${max}.`);
  }
  if (config.currentTools !== undefined && typeof config.currentTools !== "function") {
    throw new TypeError(
      `agentLoop: currentTools must be a function that returns the run's tools, got ${typeof config.currentTools}.`,
    );
  }
  const timeout = config.hookTimeoutMs;
  if (timeout !== undefined && !(typeof timeout === "number" && timeout > 0 && timeout <= MAX_TIMER_MS)) {
    throw new TypeError(
      `agentLoop: hookTimeoutMs must be a number of milliseconds from 1 to ${MAX_TIMER_MS} (about 24.8 days, ` +
        `the longest timer Node keeps), got ${String(timeout)}. Leave it out to wait for the hooks without a bound.`,
    );
  }
}

/** The event sink as the loop uses it: `emit` never throws; `failure` holds the sink's first throw. */
export interface GuardedSink {
  emit(event: AgentEvent): void | Promise<void>;
  readonly failure: { error: unknown } | undefined;
}

/**
 * Wraps a sink: a throw or a rejection is kept (the first one) instead of reaching the loop; a
 * promise the sink returns is awaited until the signal is aborted, never after, so a sink that
 * never settles cannot keep an aborted run alive. Without a promise, no promise and no microtask.
 */
export function guardSink(
  sink: (event: AgentEvent) => void | Promise<void>,
  signal: AbortSignal | undefined,
): GuardedSink {
  const guarded: { emit: GuardedSink["emit"]; failure: { error: unknown } | undefined } = {
    failure: undefined,
    emit(event) {
      let delivered: void | Promise<void>;
      try {
        delivered = sink(event);
      } catch (error) {
        guarded.failure ??= { error };
        return;
      }
      if (delivered === undefined) return;
      return settle(() => delivered, signal).then((outcome) => {
        if (outcome.kind === "threw") guarded.failure ??= { error: outcome.error };
      });
    },
  };
  return guarded;
}

// ---------------------------------------------------------------------------------------------
// The context hooks and the queues
// ---------------------------------------------------------------------------------------------

/**
 * `transformContext` then `convertToLlm` as one function from the run's transcript to the model's
 * messages. Each hook gets a copy (one that mutates its input cannot corrupt the transcript); a
 * throw, or an answer that is not an array, rejects with `<hook> failed: …` (or `… must return an
 * array of messages`); once the signal is aborted it stops waiting and rejects too.
 */
export function guardContextHooks(
  config: AgentLoopConfig,
  signal: AbortSignal | undefined,
  defaultConvertToLlm: (messages: AgentMessage[]) => Message[],
): (transcript: AgentMessage[]) => Promise<Message[]> {
  const { transformContext, convertToLlm = defaultConvertToLlm } = config;
  return async (transcript) => {
    let messages = transcript;
    if (transformContext !== undefined) {
      const transformed = await settle(() => transformContext(transcript.slice(), signal), signal);
      messages = valueOf("transformContext", transformed);
      if (!Array.isArray(messages)) throw new TypeError("transformContext must return an array of messages");
    }
    // (the default conversion only filters: it needs no copy of its own)
    const input = messages === transcript && convertToLlm !== defaultConvertToLlm ? messages.slice() : messages;
    const llm = valueOf("convertToLlm", await settle(() => convertToLlm(input), signal));
    if (!Array.isArray(llm)) throw new TypeError("convertToLlm must return an array of messages");
    return llm;
  };
}

/** A hook's value, or an error naming the hook. */
function valueOf<T>(name: string, outcome: Settled<T>): T {
  if (outcome.kind === "value") return outcome.value;
  if (outcome.kind === "threw") throw new Error(`${name} failed: ${messageOf(outcome.error)}`);
  throw new Error(`${name} was not waited for: the run was aborted.`);
}

/** A queue poll: the messages (a fresh array), or the text the run ends with when the getter failed. */
export type QueuePoll = () => Promise<AgentMessage[] | string>;

/**
 * The two queue getters as polls that never throw: no getter answers no messages; a throw, or an
 * answer that is not an array of messages, is `<getter> failed: …`; a getter still pending when
 * the signal is aborted answers no messages at once (its late answer is ignored).
 */
export function guardQueues(
  config: AgentLoopConfig,
  signal: AbortSignal | undefined,
): { steering: QueuePoll; followUps: QueuePoll } {
  const poll =
    (name: "getSteeringMessages" | "getFollowUpMessages"): QueuePoll =>
    async () => {
      const getter = config[name];
      if (getter === undefined) return [];
      const outcome = await settle(() => getter(), signal);
      if (outcome.kind === "aborted" || outcome.kind === "timedOut") return [];
      const messages = outcome.kind === "value" ? readMessages(outcome.value) : messageOf(outcome.error);
      return typeof messages === "string" ? `${name} failed: ${messages}` : messages;
    };
  return { steering: poll("getSteeringMessages"), followUps: poll("getFollowUpMessages") };
}

/** A getter's answer as a fresh array of messages, or what is wrong with it (never throws). */
export function readMessages(value: unknown): AgentMessage[] | string {
  if (value === undefined || value === null) return [];
  try {
    if (!Array.isArray(value)) return "it must return an array of messages";
    const messages = [...(value as unknown[])];
    for (const message of messages) {
      if (typeof message !== "object" || message === null || typeof (message as AgentMessage).role !== "string") {
        return "it returned something that is not a message (an object with a role)";
      }
    }
    return messages as AgentMessage[];
  } catch (error) {
    return `it returned messages that cannot be read (${messageOf(error)})`;
  }
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

/** One model turn's stream, guarded. */
export interface GuardedModelStream {
  /** The next event; `undefined` once the signal is aborted (reading is then stopped). Rejects with what the stream throws. */
  next(): Promise<IteratorResult<ModelEvent> | undefined>;
  /** The stream's final message; `undefined` once the signal is aborted. Rejects with what it throws. */
  result(): Promise<AssistantMessage | undefined>;
  /** Stops reading a stream the turn no longer waits for; whatever it does next is ignored. Never throws. */
  stop(): void;
}

/**
 * Calls `model.stream` (it may throw) and wraps what it returns: a model that ignores the signal
 * cannot keep an aborted run waiting, and one that never ends is not read after the abort.
 */
export function openModelStream(model: Model, context: Context, signal: AbortSignal | undefined): GuardedModelStream {
  const stream = model.stream(context, { signal });
  const events = stream[Symbol.asyncIterator]();
  const guarded: GuardedModelStream = {
    next: signal === undefined ? () => events.next() : () => nextOrAbort(events, signal, guarded),
    async result() {
      const final = await settle(() => stream.result(), signal);
      if (final.kind === "threw") throw final.error;
      return final.kind === "value" ? final.value : undefined;
    },
    stop() {
      try {
        const closed = events.return?.();
        if (closed !== undefined) Promise.resolve(closed).then(undefined, () => {});
      } catch {
        // a broken iterator: nothing more to stop
      }
    },
  };
  return guarded;
}

/** The stream's next item, or undefined once the signal is aborted (then reading stops). */
async function nextOrAbort(
  events: AsyncIterator<ModelEvent>,
  signal: AbortSignal,
  stream: GuardedModelStream,
): Promise<IteratorResult<ModelEvent> | undefined> {
  const next = await settle(() => events.next(), signal);
  if (next.kind === "threw") throw next.error;
  if (next.kind === "value") return next.value;
  stream.stop();
  return undefined;
}

/** The partial message of a turn's first event, or a throw saying what is wrong with it. */
export function checkedPartial(partial: AssistantMessage): AssistantMessage {
  const problem = malformation(partial, false);
  if (problem !== undefined) throw new Error(`its partial message is malformed: ${problem}`);
  return partial;
}

/**
 * A model's final message as the loop may record it, or what is wrong with it: read whole once
 * (`malformation`), its repeated call ids renamed (`withUniqueCallIds`), and an abort given the
 * same details whoever saw it first (a model that set none gets a provider's).
 */
export function checkedFinal(
  run: { repeatedCalls: ReadonlyMap<string, string> | undefined },
  message: AssistantMessage,
): AssistantMessage | string {
  const problem = malformation(message);
  if (problem !== undefined) return problem;
  message = withUniqueCallIds(run, message);
  if (message.stopReason === "aborted" && message.errorDetails === undefined) {
    message = { ...message, errorDetails: { kind: "aborted", retryable: false } };
  }
  return message;
}

/** A copy of what a failed turn had streamed, or none when it cannot be copied (getters that throw). */
export function partialContent(started: AssistantMessage | undefined): AssistantMessage["content"] {
  try {
    if (started !== undefined && Array.isArray(started.content)) return structuredClone(started.content);
  } catch {
    // keep no content rather than a half-copied one
  }
  return [];
}

const STOP_REASONS: ReadonlySet<unknown> = new Set(["stop", "length", "toolUse", "error", "aborted"]);

/**
 * What is wrong with a model's message, checked before it is reported (the partial) or recorded
 * (the final one, `final`); undefined if nothing. Reads every field the loop reads later, so that
 * a message whose getters throw (or a Proxy) is refused here, once: never throws.
 */
export function malformation(message: unknown, final = true): string | undefined {
  try {
    if (typeof message !== "object" || message === null) return "it is not an object";
    const m = message as Partial<AssistantMessage>;
    if (m.role !== "assistant") return `its role is ${show(m.role)}, not "assistant"`;
    const content: unknown = m.content;
    if (!final) return undefined; // a partial may still be odd; the final message decides
    if (!Array.isArray(content)) return "its content is not an array";
    if (!STOP_REASONS.has(m.stopReason)) {
      return `its stopReason ${show(m.stopReason)} is not one of stop, length, toolUse, error, aborted`;
    }
    for (const block of content as unknown[]) {
      if (typeof block !== "object" || block === null) return "a content block is not an object";
      const b = block as Partial<ToolCall>;
      if (b.type !== "toolCall") continue;
      if (typeof b.id !== "string" || typeof b.name !== "string") return "a tool call has no string id or name";
      void b.arguments;
      void b.argumentsError;
      void b.rawArguments;
    }
    return undefined;
  } catch (error) {
    return `it cannot be read (${messageOf(error)})`;
  }
}

/** A value in a message, for an error text (never throws). */
function show(value: unknown): string {
  try {
    return typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    return "(unreadable)";
  }
}

/**
 * Two tool calls of one message with the same id: providers refuse a transcript in which two
 * calls, or two results, share an id (OpenAI: "Duplicate value for 'tool_call_id'"; Anthropic:
 * tool_use ids must be unique), so answering both under one id would break the next request.
 * The first call keeps its id and runs; each repeat gets a fresh id (`<id>_dup1`, `<id>_dup2`, …,
 * unused in the message) in a copy of the message, and the batch answers it with an error result
 * without running it (`repeatedCallAnswer`). The result: one call, one id, one start/end, one
 * result, on every wire. Sets `run.repeatedCalls` for the batch (fresh id → repeated id;
 * undefined when none).
 */
export function withUniqueCallIds(
  run: { repeatedCalls: ReadonlyMap<string, string> | undefined },
  message: AssistantMessage,
): AssistantMessage {
  run.repeatedCalls = undefined;
  let calls = 0;
  for (const block of message.content) if (block.type === "toolCall") calls++;
  if (calls < 2) return message; // the common case, without a set
  const ids = new Set<string>();
  let repeats = 0;
  for (const block of message.content) {
    if (block.type !== "toolCall") continue;
    if (ids.has(block.id)) repeats++;
    ids.add(block.id);
  }
  if (repeats === 0) return message;
  const repeated = new Map<string, string>();
  const seen = new Set<string>();
  const content = message.content.map((block) => {
    if (block.type !== "toolCall") return block;
    if (!seen.has(block.id)) {
      seen.add(block.id);
      return block;
    }
    let k = 1;
    while (ids.has(`${block.id}_dup${k}`)) k++;
    const id = `${block.id}_dup${k}`;
    ids.add(id);
    repeated.set(id, block.id);
    return { ...block, id };
  });
  run.repeatedCalls = repeated;
  return { ...message, content };
}

/** The error text of a call renamed by `withUniqueCallIds` (`repeated`: the id it repeated). */
export function repeatedCallAnswer(call: ToolCall, repeated: string): string {
  return (
    `Tool call "${call.name}" was not executed: its id "${repeated}" was already used by an earlier call ` +
    `in the same message, so it was renamed "${call.id}". Every call needs its own id; re-issue this ` +
    `call if it is still needed.`
  );
}

// ---------------------------------------------------------------------------------------------
// The tools and their hooks
// ---------------------------------------------------------------------------------------------

/** How a tool's `execute` ended, as the batch may trust it. */
export type ToolRun =
  | { kind: "done"; result: AgentToolResult<unknown> }
  | { kind: "failed"; text: string }
  | { kind: "aborted" };

/**
 * Runs `execute` (any callback that calls it) under `settle`: a throw or a rejection is `failed`
 * with its text; the result is read once into plain data (`readToolResult`: a result that is not
 * `{content, details}`, or cannot be read, is `failed` too); once the signal is aborted the tool
 * is no longer waited for (`aborted`; its late answer is ignored, a late rejection handled).
 */
export async function runGuardedTool(
  name: string,
  execute: () => Promise<AgentToolResult<unknown>>,
  signal: AbortSignal | undefined,
): Promise<ToolRun> {
  const executed = await settle(execute, signal);
  if (executed.kind === "threw") return { kind: "failed", text: messageOf(executed.error) };
  if (executed.kind !== "value") return { kind: "aborted" };
  const result = readToolResult(executed.value);
  return typeof result === "string" ? { kind: "failed", text: `Tool "${name}" ${result}` } : { kind: "done", result };
}

/**
 * What a tool resolved to, read once into a plain result; a string says what is wrong with it.
 * Never throws: a result whose getters throw (or a Proxy) is reported, not propagated.
 */
export function readToolResult(value: unknown): AgentToolResult<unknown> | string {
  const expected = "execute must resolve to {content, details}";
  try {
    if (typeof value !== "object" || value === null) return `returned no valid result: ${expected}.`;
    const { content, details, isError, terminate } = value as AgentToolResult<unknown>;
    if (!Array.isArray(content)) return `returned no valid result: ${expected}.`;
    const result: AgentToolResult<unknown> = { content: [...content], details };
    if (isError !== undefined && isError !== null) result.isError = isError === true;
    if (terminate !== undefined && terminate !== null) result.terminate = terminate === true;
    const declareTools: unknown = (value as AgentToolResult<unknown>).declareTools;
    if (Array.isArray(declareTools)) result.declareTools = declareTools.filter((name) => typeof name === "string");
    return result;
  } catch (error) {
    return `returned a result that cannot be read (${messageOf(error)}): ${expected}, as plain data.`;
  }
}

/** A tool hook's answer as the batch may trust it: its value read once, an abort, or the hook's failure. */
export type HookAnswer<T> = { kind: "value"; value: T } | { kind: "aborted" } | { kind: "failed"; failure: string };

/** `beforeToolCall`'s answer, read: `undefined` runs the call, a string blocks it with that reason, `null` blocks it without one. */
export type BeforeAnswer = HookAnswer<string | null | undefined>;

/** The two tool hooks, guarded; `undefined` when the config sets none. */
export interface GuardedToolHooks {
  before?: (ctx: BeforeToolCallContext) => Promise<BeforeAnswer>;
  /** The override read into plain fields (`content` copied; `details` present only if the hook gave it), or `undefined`. */
  after?: (ctx: AfterToolCallContext) => Promise<HookAnswer<AfterToolCallResult | undefined>>;
}

/**
 * Wraps `beforeToolCall` and `afterToolCall`: each runs under `settle` with the signal and
 * `hookTimeoutMs`; a throw, an answer that cannot be read (a getter that throws, `content` that
 * is not an array) and a timeout are `failed`, with the text the run ends with (`hookFailure`).
 * An abort is `aborted` (for `beforeToolCall` also when the signal fired as it answered).
 */
export function guardToolHooks(
  config: Pick<AgentLoopConfig, "beforeToolCall" | "afterToolCall" | "hookTimeoutMs">,
  signal: AbortSignal | undefined,
): GuardedToolHooks {
  const { beforeToolCall: before, afterToolCall: after, hookTimeoutMs } = config;
  const hooks: GuardedToolHooks = {};
  if (before !== undefined) {
    hooks.before = async (ctx) => {
      // #region lab 7.4 guardToolHooks.before
      const outcome = await settle(() => before(ctx, signal), signal, hookTimeoutMs);
      if (outcome.kind === "aborted" || signal?.aborted) return ABORTED_ANSWER;
      if (outcome.kind !== "value") return failed("beforeToolCall", ctx.toolCall, outcome, hookTimeoutMs);
      try {
        // a hostile answer (a getter that throws) is the hook's failure, not the loop's
        if (outcome.value?.block !== true) return { kind: "value", value: undefined };
        const reason: unknown = outcome.value.reason;
        return { kind: "value", value: typeof reason === "string" ? reason : null };
      } catch (error) {
        return failed("beforeToolCall", ctx.toolCall, { kind: "threw", error }, hookTimeoutMs);
      }
      // #endregion
    };
  }
  if (after !== undefined) {
    hooks.after = async (ctx) => {
      // #region lab 7.4 guardToolHooks.after
      const outcome = await settle(() => after(ctx, signal), signal, hookTimeoutMs);
      if (outcome.kind === "aborted") return ABORTED_ANSWER;
      if (outcome.kind !== "value") return failed("afterToolCall", ctx.toolCall, outcome, hookTimeoutMs);
      try {
        return { kind: "value", value: readOverride(outcome.value) };
      } catch (error) {
        return failed("afterToolCall", ctx.toolCall, { kind: "threw", error }, hookTimeoutMs);
      }
      // #endregion
    };
  }
  return hooks;
}

const ABORTED_ANSWER: { kind: "aborted" } = Object.freeze({ kind: "aborted" });

/** `afterToolCall`'s answer as plain fields, each read once; throws what is wrong with it. */
function readOverride(override: AfterToolCallResult | undefined | null): AfterToolCallResult | undefined {
  if (override === undefined || override === null) return undefined;
  if (typeof override !== "object") throw new TypeError("it must return an object or undefined");
  const content: unknown = override.content;
  if (content !== undefined && content !== null && !Array.isArray(content)) {
    throw new TypeError("its content must be an array of text blocks");
  }
  const read: AfterToolCallResult = {};
  if (content) read.content = [...(content as TextContent[])];
  // a field given, even as undefined, replaces the tool's: `details: undefined` clears it
  if ("details" in override) read.details = override.details;
  const terminate: unknown = override.terminate;
  if (terminate !== undefined && terminate !== null) read.terminate = terminate === true;
  const isError: unknown = override.isError;
  if (isError !== undefined && isError !== null) read.isError = isError === true;
  return read;
}

/** A hook's failure: it threw (or answered unreadably), or it did not settle within `hookTimeoutMs`. */
function failed(
  hook: "beforeToolCall" | "afterToolCall",
  call: ToolCall,
  outcome: { kind: "threw"; error: unknown } | { kind: "timedOut" },
  timeoutMs: number | undefined,
): { kind: "failed"; failure: string } {
  if (outcome.kind === "threw")
    return { kind: "failed", failure: `${hook} failed for "${call.name}": ${messageOf(outcome.error)}` };
  return {
    kind: "failed",
    failure:
      `${hook} failed for "${call.name}": it did not settle within ${timeoutMs} ms ` +
      `(hookTimeoutMs in the loop config); its late answer is ignored.`,
  };
}
