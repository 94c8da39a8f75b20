/**
 * One tool batch of the agent loop: every tool call of an assistant message, each answered by
 * exactly one result, whatever happens.
 *
 * Per call: find the tool → `prepareArguments` → validate → `beforeToolCall` → `execute` →
 * `afterToolCall` → result. Any failure on the way (unknown tool, malformed or invalid
 * arguments, a block, a throw, an abort) becomes an error result the model can read.
 *
 * A throw from `beforeToolCall` or `afterToolCall` is a bug in the application, not something the
 * model can fix: the call still gets its error result, calls not yet started are answered
 * without running, and the outcome's `hookFailure` tells the loop to end the run.
 *
 * A batch is parallel unless the config or one of its tools asks for sequential execution.
 * Parallel: calls are prepared one by one in source order, then run together;
 * `tool_execution_end` is emitted as each finishes, and the result messages follow in source
 * order. Sequential: each call is prepared, run and answered before the next one starts.
 */
import { repeatedCallAnswer, runGuardedTool } from "./guards.js";
import type { GuardedToolHooks } from "./guards.js";
import { messageOf, prepareToolArguments } from "./tools.js";
import type {
  AgentContext,
  AgentTool,
  AgentToolResult,
  AssistantMessage,
  ToolCall,
  ToolResultMessage,
  ToolExecutionContext,
} from "../types.js";
import type { AgentEvent, AgentLoopConfig, AnsweredToolCall, ToolMiddleware } from "./types.js";

/** A call made by another call's tool (through its `ToolExecutionContext`) → that call. */
const parentOf = new WeakMap<ToolCall, ToolCall>();

/**
 * Receives the loop's events. Contract: may return a promise; the loop waits for it (until the
 * run is aborted). A throw is kept and reported once the run has ended (see `guardSink`).
 */
export type AgentEventSink = (event: AgentEvent) => void | Promise<void>;

/**
 * What a batch needs from its run. Its `emit` and `hooks` are guarded (guards.ts): they never
 * throw, and never keep an aborted run waiting.
 */
export interface ToolBatchRun {
  readonly config: AgentLoopConfig;
  /** The run's live context (the transcript so far, the tools); hooks see it. */
  readonly context: AgentContext;
  readonly signal: AbortSignal | undefined;
  readonly emit: AgentEventSink;
  /** `beforeToolCall` and `afterToolCall`, guarded (see `guardToolHooks`). */
  readonly hooks: GuardedToolHooks;
  /**
   * The calls of this turn's message whose id repeated an earlier call's: the loop gave each a
   * fresh id (the key) and keeps the id it repeated (the value). They are answered, never run.
   */
  readonly repeatedCalls?: ReadonlyMap<string, string>;
  /** The hooks the run's features add to each call (see `ToolMiddleware`). */
  readonly middleware: readonly ToolMiddleware[];
  /** Takes the tools `config.currentTools` gives now, if they changed (see `LoopRun.syncTools`); may throw. */
  syncTools?(): void;
}

/** The results of one batch, in source order, and whether every one of them said `terminate`. */
export interface ToolBatchOutcome {
  results: ToolResultMessage[];
  terminate: boolean;
  /** Set when a tool hook threw: what to report as the run's final error. */
  hookFailure?: string;
}

/** What the calls of one batch share: the assistant message, and the first hook failure. */
interface Batch {
  readonly message: AssistantMessage;
  hookFailure?: string;
}

/** A call answered before execution. */
type AnsweredCall = { kind: "answered"; call: ToolCall; result: AgentToolResult<unknown>; isError: boolean };
/** A call found, with valid arguments, allowed to run. */
type ReadyCall = { kind: "ready"; call: ToolCall; tool: AgentTool<any, any>; args: unknown };
type PreparedCall = AnsweredCall | ReadyCall;

/** A call with its final result. */
interface FinishedCall {
  call: ToolCall;
  result: AgentToolResult<unknown>;
  isError: boolean;
}

/** Runs every call of `message` and answers each with one result message. Never rejects for a tool's sake. */
export async function executeToolBatch(
  run: ToolBatchRun,
  message: AssistantMessage,
  calls: readonly ToolCall[],
): Promise<ToolBatchOutcome> {
  // #region lab 7.3 executeToolBatch
  const batch: Batch = { message };
  const sequential =
    run.config.toolExecution === "sequential" ||
    calls.some((call) => findTool(run.context, call.name)?.executionMode === "sequential");
  const finished: FinishedCall[] = [];
  const results: ToolResultMessage[] = [];
  if (sequential) {
    for (const call of calls) {
      await emitStart(run, call);
      const prepared = await prepareCall(run, batch, call);
      const done = prepared.kind === "answered" ? prepared : await runPreparedCall(run, batch, prepared);
      await emitEnd(run, done);
      finished.push(done);
      results.push(await emitResult(run, done));
    }
  } else {
    const prepared: PreparedCall[] = [];
    for (const call of calls) {
      await emitStart(run, call);
      const one = await prepareCall(run, batch, call);
      if (one.kind === "answered") await emitEnd(run, one);
      prepared.push(one);
    }
    const settled = await Promise.all(
      prepared.map(async (one) => {
        if (one.kind === "answered") return one;
        const done = await runPreparedCall(run, batch, one);
        await emitEnd(run, done);
        return done;
      }),
    );
    for (const done of settled) {
      finished.push(done);
      results.push(await emitResult(run, done));
    }
  }
  const terminate = finished.length > 0 && finished.every((done) => done.result.terminate === true);
  const outcome: ToolBatchOutcome = { results, terminate };
  if (batch.hookFailure !== undefined) outcome.hookFailure = batch.hookFailure;
  return outcome;
  // #endregion
}

/**
 * Answers the calls of a `length` turn without running them: their arguments may be cut off.
 * Each result asks the model to re-issue the call.
 */
export async function refuseTruncatedCalls(
  run: ToolBatchRun,
  calls: readonly ToolCall[],
): Promise<ToolResultMessage[]> {
  const results: ToolResultMessage[] = [];
  for (const call of calls) {
    await emitStart(run, call);
    const done = answered(
      call,
      `Tool call "${call.name}" was not executed: the response was cut off at the output token ` +
        `limit, so its arguments may be incomplete. Re-issue the call with complete arguments.`,
    );
    await emitEnd(run, done);
    results.push(await emitResult(run, done));
  }
  return results;
}

/** find → prepareArguments → validate → beforeToolCall. Never throws. */
async function prepareCall(run: ToolBatchRun, batch: Batch, call: ToolCall): Promise<PreparedCall> {
  // #region lab 7.3 prepareCall
  if (run.signal?.aborted) return abortedCall(call);
  if (batch.hookFailure !== undefined) {
    return answered(call, `Tool call "${call.name}" was not executed: the run is ending (${batch.hookFailure}).`);
  }
  const repeated = run.repeatedCalls?.get(call.id);
  if (repeated !== undefined) return answered(call, repeatedCallAnswer(call, repeated));
  for (const middleware of run.middleware) {
    const refused = middleware.refuse?.(call, parentOf.get(call));
    if (refused !== undefined) return answered(call, refused);
  }
  const tool = findTool(run.context, call.name);
  if (tool === undefined) {
    const names = (run.context.tools ?? []).map((t) => t.name).join(", ") || "(none)";
    return answered(call, `Tool "${call.name}" not found. Available tools: ${names}.`);
  }
  let args: unknown;
  try {
    args = prepareToolArguments(tool, call);
  } catch (error) {
    return answered(call, messageOf(error));
  }
  const ready: ReadyCall = { kind: "ready", call, tool, args };
  // (askBeforeToolCall also returns at once without a hook; skipping the call saves an await per call)
  if (run.hooks.before === undefined) return ready;
  return (await askBeforeToolCall(run, batch, ready)) ?? ready;
  // #endregion
}

/** execute → afterToolCall. After an abort it answers at once (late results are dropped). */
async function runPreparedCall(run: ToolBatchRun, batch: Batch, ready: ReadyCall): Promise<FinishedCall> {
  // #region lab 7.3 runPreparedCall
  const { call, tool, args } = ready;
  if (run.signal?.aborted) return abortedCall(call);
  let open = true; // no tool_execution_update after this call's tool_execution_end
  const updates: Promise<void>[] = [];
  const onUpdate = (partialResult: AgentToolResult<unknown>): void => {
    if (!open) return;
    const event: AgentEvent = {
      type: "tool_execution_update",
      toolCallId: call.id,
      toolName: call.name,
      args: call.arguments,
      partialResult,
    };
    const emitted = run.emit(tagged(event, call));
    if (emitted !== undefined) updates.push(emitted);
  };
  const context = executionContext(run, batch, call);
  const executed = await runGuardedTool(
    call.name,
    () => tool.execute(call.id, args, run.signal, onUpdate, context),
    run.signal,
  );
  open = false;
  await Promise.all(updates);
  if (executed.kind === "failed") return answered(call, executed.text);
  if (executed.kind === "aborted") return abortedCall(call);
  const done: FinishedCall = { call, result: executed.result, isError: executed.result.isError === true };
  if (run.hooks.after === undefined) return done;
  return applyAfterToolCall(run, batch, ready, done);
  // #endregion
}

/**
 * `beforeToolCall`: an error result if it blocks, fails (which also ends the run) or is overtaken
 * by an abort; else undefined (also when no hook is set: call it for every call).
 */
async function askBeforeToolCall(run: ToolBatchRun, batch: Batch, ready: ReadyCall): Promise<AnsweredCall | undefined> {
  const before = run.hooks.before;
  if (before === undefined) return undefined;
  // #region lab 7.4 askBeforeToolCall
  const { call, tool, args } = ready;
  const answer = await before({ assistantMessage: batch.message, toolCall: call, args, tool, context: run.context });
  if (answer.kind === "aborted") return abortedCall(call);
  if (answer.kind === "failed") return hookThrew(batch, call, answer.failure);
  if (answer.value === undefined) return undefined;
  return answered(call, answer.value ?? `Tool call "${call.name}" was blocked.`);
  // #endregion
}

/**
 * `afterToolCall`: overrides the result field by field; a failure becomes an error result and
 * ends the run. An abort while it runs keeps the tool's own result: the tool has already run.
 * Without a hook, the tool's result as it is (call it for every call).
 */
async function applyAfterToolCall(
  run: ToolBatchRun,
  batch: Batch,
  ready: ReadyCall,
  done: FinishedCall,
): Promise<FinishedCall> {
  const after = run.hooks.after;
  if (after === undefined) return done;
  // #region lab 7.4 applyAfterToolCall
  const { call, tool, args } = ready;
  const answer = await after({
    assistantMessage: batch.message,
    toolCall: call,
    args,
    tool,
    context: run.context,
    result: done.result,
    isError: done.isError,
  });
  // The tool has already run: an abort now keeps its own result (saying "aborted before it
  // finished" would invite the model to run it again). The hook's late answer is ignored.
  if (answer.kind === "aborted") return done;
  if (answer.kind === "failed") return hookThrew(batch, call, answer.failure);
  const override = answer.value;
  if (override === undefined) return done;
  const result: AgentToolResult<unknown> = {
    ...done.result,
    content: override.content ?? done.result.content,
    // a field given, even as undefined, replaces the tool's: `details: undefined` clears it
    details: "details" in override ? override.details : done.result.details,
  };
  if (override.terminate !== undefined) result.terminate = override.terminate;
  // the override reaches the result itself too, not only tool_execution_end and the message
  if (override.isError !== undefined) result.isError = override.isError;
  return { call, result, isError: result.isError ?? done.isError };
  // #endregion
}

/**
 * The `context` argument of a call's `execute`, from the first middleware that gives one: the calls
 * its tool makes run through this batch's pipeline, with their events tagged by the parent's id.
 */
function executionContext(run: ToolBatchRun, batch: Batch, parent: ToolCall): ToolExecutionContext | undefined {
  for (const middleware of run.middleware) {
    if (middleware.context === undefined) continue;
    return middleware.context(parent, async (call, signal): Promise<AnsweredToolCall> => {
      parentOf.set(call, parent);
      // a call its caller may abort alone runs under both signals
      const both = signal === undefined ? undefined : joinSignals(run.signal, signal);
      const under = both === undefined ? run : { ...run, signal: both.signal };
      try {
        await emitStart(under, call);
        const prepared = await prepareCall(under, batch, call);
        const done = prepared.kind === "answered" ? prepared : await runPreparedCall(under, batch, prepared);
        await emitEnd(under, done);
        return done;
      } finally {
        both?.release();
      }
    });
  }
  return undefined;
}

/** A signal that fires with either of two; `release` drops its listeners once the call has ended. */
function joinSignals(a: AbortSignal | undefined, b: AbortSignal): { signal: AbortSignal; release(): void } {
  const joined = new AbortController();
  const stop = (): void => joined.abort();
  if (a?.aborted === true || b.aborted) stop();
  a?.addEventListener("abort", stop, { once: true });
  b.addEventListener("abort", stop, { once: true });
  return {
    signal: joined.signal,
    release() {
      a?.removeEventListener("abort", stop);
      b.removeEventListener("abort", stop);
    },
  };
}

/** `event` with the id of the call whose tool made `call`, if one did. */
function tagged<E extends { parentToolCallId?: string }>(event: E, call: ToolCall): E {
  const parent = parentOf.get(call);
  if (parent !== undefined) event.parentToolCallId = parent.id;
  return event;
}

function findTool(context: AgentContext, name: string): AgentTool<any, any> | undefined {
  const tools = context.tools;
  if (tools === undefined) return undefined;
  for (const tool of tools) if (tool.name === name) return tool;
  return undefined;
}

function answered(call: ToolCall, text: string): AnsweredCall {
  return {
    kind: "answered",
    call,
    result: { content: [{ type: "text", text }], details: undefined, isError: true },
    isError: true,
  };
}

/** A hook threw: the call is answered with the failure, and the batch remembers the first one. */
function hookThrew(batch: Batch, call: ToolCall, failure: string): AnsweredCall {
  batch.hookFailure ??= failure;
  return answered(call, failure);
}

function abortedCall(call: ToolCall): AnsweredCall {
  return answered(call, `Tool call "${call.name}" was aborted: the run was stopped before it finished.`);
}

// The emitters return the sink's promise, if any, without an async wrapper of their own: with a
// sink that does not return one (the common case) an event costs no promise and no microtask.

function emitStart(run: ToolBatchRun, call: ToolCall): void | Promise<void> {
  const event: AgentEvent = {
    type: "tool_execution_start",
    toolCallId: call.id,
    toolName: call.name,
    args: call.arguments,
  };
  return run.emit(tagged(event, call));
}

function emitEnd(run: ToolBatchRun, done: FinishedCall): void | Promise<void> {
  const event: AgentEvent = {
    type: "tool_execution_end",
    toolCallId: done.call.id,
    toolName: done.call.name,
    result: done.result,
    isError: done.isError,
  };
  return run.emit(tagged(event, done.call));
}

/** The result message of one call, emitted as message_start/message_end. */
function emitResult(run: ToolBatchRun, done: FinishedCall): ToolResultMessage | Promise<ToolResultMessage> {
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: done.call.id,
    toolName: done.call.name,
    content: done.result.content,
    isError: done.isError,
    timestamp: Date.now(),
  };
  if (done.result.details !== undefined) message.details = done.result.details;
  // a tool that waited for others to join (a search for a server's tools) declares them: take them first
  try {
    run.syncTools?.();
  } catch {
    // the run keeps its tools; the next request reports the hook's failure
  }
  for (const middleware of run.middleware) middleware.result?.(message, done);
  const started = run.emit({ type: "message_start", message });
  if (started !== undefined) return started.then(() => run.emit({ type: "message_end", message })).then(() => message);
  const ended = run.emit({ type: "message_end", message });
  return ended === undefined ? message : ended.then(() => message);
}
