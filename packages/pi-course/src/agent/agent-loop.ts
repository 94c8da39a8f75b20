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
 * The loop calls the user's code under its contract; the guards (guards.ts) keep the contract
 * for code that does not.
 */
import { EventStream } from "../event-stream.js";
import { checkLoopConfig, checkedFinal, checkedPartial, openModelStream, partialContent } from "./guards.js";
import type { GuardedModelStream } from "./guards.js";
import { executeToolBatch, refuseTruncatedCalls } from "./tool-execution.js";
import type { AgentEventSink } from "./tool-execution.js";
import { LoopRun } from "./loop-run.js";
import { messageOf } from "./tools.js";
import type { AgentContext, AgentMessage, AssistantMessage, Context, ToolCall, ToolResultMessage } from "../types.js";
import type { AgentEvent, AgentEventStream, AgentLoopConfig } from "./types.js";

export { defaultConvertToLlm } from "./loop-run.js";

/** The most model turns one run takes when `maxTurns` is not set. */
export const DEFAULT_MAX_TURNS = 50;

/**
 * Starts a run with new prompt messages: they are added to the transcript (and reported as
 * messages) before the first model turn. The stream's result is every message the run added,
 * prompts included. `context` is not changed. Breaking out of the stream does not stop the run;
 * call the stream's `abort()` (or abort `signal`) to stop it.
 */
export function agentLoop(
  prompts: AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  signal?: AbortSignal,
): AgentEventStream {
  if (!Array.isArray(prompts)) throw new TypeError("agentLoop: prompts must be an array of messages.");
  return streamOf((sink, stop) => runAgentLoop(prompts, context, config, sink, stop), signal);
}

/**
 * Continues a run from the transcript as it stands (e.g. after an error or the turn limit, or
 * with tool results already present), without new prompts. Trailing error/aborted assistant
 * messages are fine: the model never sees them (`defaultConvertToLlm` and the wire drop them).
 * Throws if nothing else is left, or if the last other message is an assistant message: there
 * would be nothing for the model to answer.
 */
export function agentLoopContinue(
  context: AgentContext,
  config: AgentLoopConfig,
  signal?: AbortSignal,
): AgentEventStream {
  checkContinuable(context);
  return streamOf((sink, stop) => runAgentLoopContinue(context, config, sink, stop), signal);
}

/**
 * `agentLoop` with a sink instead of a stream (for an owner that awaits its subscribers).
 * Resolves with the new messages once `agent_end` has been delivered; rejects only if the sink
 * threw, and then after the run has ended. The loop awaits each promise the sink returns, until
 * `signal` is aborted: from then on events are still delivered in order, but not waited for, so
 * a sink that never settles cannot keep an aborted run pending (its late rejection is ignored).
 */
export function runAgentLoop(
  prompts: AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  sink: AgentEventSink,
  signal?: AbortSignal,
): Promise<AgentMessage[]> {
  checkLoopConfig(config);
  // Without prompts this is a continuation, and must leave the model something to answer.
  if (prompts.length === 0) checkContinuable(context, "agentLoop");
  return new LoopRun(context, config, sink, signal).run([...prompts], runLoop);
}

/** `agentLoopContinue` with a sink instead of a stream; see `runAgentLoop`. */
export function runAgentLoopContinue(
  context: AgentContext,
  config: AgentLoopConfig,
  sink: AgentEventSink,
  signal?: AbortSignal,
): Promise<AgentMessage[]> {
  checkLoopConfig(config);
  checkContinuable(context);
  return new LoopRun(context, config, sink, signal).run([], runLoop);
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
    if (run.signal?.aborted) {
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
    let hookFailure: string | undefined;
    if (calls.length > 0) {
      if (message.stopReason === "length") {
        results = await refuseTruncatedCalls(run, calls);
      } else {
        ({ results, terminate, hookFailure } = await executeToolBatch(run, message, calls));
      }
      run.recordResults(results);
    }
    await run.endTurn(message, results);
    if (hookFailure !== undefined) return run.fail(hookFailure);
    if (run.signal?.aborted || terminate) return run.finish();
    // the last allowed model call was this turn's: poll no queue, and say so if tools wait for an answer
    if (run.turns >= maxTurns) return run.finish(calls.length > 0 ? turnLimitReached(run.turns, maxTurns) : undefined);
    const steering = await run.steering();
    if (typeof steering === "string") return run.fail(steering);
    if (steering.length > 0) {
      pending = steering; // polled means dequeued: inject them even if an abort came meanwhile
      continue;
    }
    if (run.signal?.aborted) return run.finish();
    if (calls.length > 0) continue;
    const followUps = await run.followUps();
    if (typeof followUps === "string") return run.fail(followUps);
    if (followUps.length === 0) return run.finish();
    pending = followUps;
  }
  // #endregion
}

/** What `agent_end` says when the turn limit leaves tool results unanswered. */
function turnLimitReached(turns: number, maxTurns: number): string {
  return (
    `Turn limit reached: this run made ${turns} model calls (maxTurns = ${maxTurns}), and the last one asked for tools ` +
    "whose results no model call has answered. Raise maxTurns in the loop config, or continue the run with agentLoopContinue."
  );
}

/**
 * Asks the model for one turn and reports it as message_start, message_update…, message_end.
 * Never throws: a failure before or during the turn is an error assistant message. Exported for
 * the tests of one turn alone; not part of the package's API.
 */
export async function streamAssistantMessage(run: LoopRun): Promise<AssistantMessage> {
  // #region lab 7.1 streamAssistantMessage
  let context: Context;
  try {
    context = await run.modelContext();
  } catch (error) {
    if (run.signal?.aborted) return reportFailure(run, undefined, ABORTED_BEFORE_MODEL, "aborted");
    return reportFailure(run, undefined, messageOf(error));
  }
  if (run.signal?.aborted) return reportFailure(run, undefined, ABORTED_BEFORE_MODEL, "aborted");
  let started: AssistantMessage | undefined;
  let stream: GuardedModelStream | undefined;
  try {
    stream = openModelStream(run.config.model, context, run.signal);
    for (;;) {
      const next = await stream.next(); // undefined: aborted, and the stream no longer read
      if (next === undefined) return reportFailure(run, started, ABORTED_WHILE_ANSWERING, "aborted");
      if (next.done === true) break;
      const event = next.value;
      if (event.type === "done" || event.type === "error") {
        return reportFinal(run, started, event.type === "done" ? event.message : event.error);
      }
      if (started === undefined) {
        started = checkedPartial(event.partial);
        await run.emit({ type: "message_start", message: started });
      }
      if (event.type !== "start") {
        const emitted = run.emit({ type: "message_update", message: event.partial, event });
        if (emitted !== undefined) await emitted;
      }
    }
    const final = await stream.result();
    if (final === undefined) return reportFailure(run, started, ABORTED_WHILE_ANSWERING, "aborted");
    return reportFinal(run, started, final);
  } catch (error) {
    stream?.stop();
    return reportFailure(run, started, `The model failed: ${messageOf(error)}`);
  }
  // #endregion
}

const ABORTED_BEFORE_MODEL = "The run was aborted before the model was called.";
const ABORTED_WHILE_ANSWERING = "The run was aborted while the model was answering.";

/**
 * Reports the model's final message (message_start first if none was sent) and records it; a
 * malformed one becomes an error message instead, so nothing after it can throw inside the turn.
 */
async function reportFinal(
  run: LoopRun,
  started: AssistantMessage | undefined,
  message: AssistantMessage,
): Promise<AssistantMessage> {
  const checked = checkedFinal(run, message);
  if (typeof checked === "string") {
    return reportFailure(run, started, `The model ended its turn without a well-formed assistant message: ${checked}.`);
  }
  message = checked;
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
  message.content = partialContent(started);
  return reportFinal(run, started, message);
}

/** Wraps a sink-based run as an `EventStream`. */
function streamOf(
  start: (sink: AgentEventSink, signal: AbortSignal) => Promise<AgentMessage[]>,
  outer: AbortSignal | undefined,
): AgentEventStream {
  const controller = new AbortController();
  const signal = outer === undefined ? controller.signal : AbortSignal.any([outer, controller.signal]);
  const events = new EventStream<AgentEvent, AgentMessage[]>(
    (event) => event.type === "agent_end",
    (event) => (event.type === "agent_end" ? event.messages : []),
  );
  const stream: AgentEventStream = Object.assign(events, { abort: (reason?: unknown) => controller.abort(reason) });
  start((event) => stream.push(event), signal).then(
    (messages) => stream.end(messages),
    () => stream.end([]),
  );
  return stream;
}

function checkContinuable(context: AgentContext, who: "agentLoop" | "agentLoopContinue" = "agentLoopContinue"): void {
  const messages = context.messages;
  if (messages.length === 0) {
    throw new Error(
      who === "agentLoop"
        ? "agentLoop: no prompts and an empty transcript, so the model would be called with no messages. " +
            'Pass the prompt: agentLoop([userMessage("…")], context, config).'
        : "agentLoopContinue: the transcript is empty; start a run with agentLoop(prompts, …).",
    );
  }
  // error/aborted assistant messages (a failed turn, the turn limit) are not in the model's view
  let k = messages.length - 1;
  while (k >= 0 && isFailedTurn(messages[k]!)) k--;
  const last = messages[k];
  if (last === undefined || last.role === "assistant") {
    throw new Error(
      `${who === "agentLoop" ? "agentLoop: no prompts, and" : "agentLoopContinue:"} the transcript ends with an ` +
        "assistant message, so the model has nothing to answer. Add a user message (agentLoop) or the missing tool results first.",
    );
  }
}

function isFailedTurn(message: AgentMessage): boolean {
  return message.role === "assistant" && (message.stopReason === "error" || message.stopReason === "aborted");
}
