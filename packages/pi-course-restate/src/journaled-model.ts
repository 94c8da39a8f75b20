/**
 * A model turn as a journaled step of the engine.
 *
 * `journaledModel(steps, model)` is a `Model` whose every `stream()` call is one step (`ctx.run`):
 * inside the step the real model streams the turn to its end and the step's result, recorded by
 * Restate, is the final assistant message (or the error message of a failed turn: `Model.stream`
 * never throws, so a failure is a recorded answer too, as in a local run). The loop then gets the
 * recorded message as `start` and `done` (or `error`).
 *
 * A turn is replay-safe: it has no effect but its cost. A worker killed while the model streams
 * left no result, so the next worker runs the turn again from its start (chapter 19 keeps the cut
 * answer in a stream journal instead; an engine's step has no place for half a result, so the
 * half is dropped and asked for again). A turn whose result was recorded is never asked again.
 *
 * The run's abort signal is not handed to the model: a step runs to its result (a run on the
 * engine is stopped by cancelling its invocation there). The model gets the step's time-limit
 * signal instead (run-limits.ts): a turn past its limit is recorded as a failed turn saying so.
 */
import {
  type AssistantMessage,
  AssistantMessageEventStream,
  assistantMessage,
  type Context,
  type Model,
  type StreamOptions,
} from "@pi/course";
import { untilAborted } from "./run-limits.js";
import type { Steps } from "./steps.js";

/** `model`, each turn a step of `steps` named `turn N` (N counts from 0 in this handler). */
export function journaledModel(steps: Steps, model: Model): Model {
  let turns = 0;
  return {
    provider: model.provider,
    id: model.id,
    stream(context: Context, options?: StreamOptions): AssistantMessageEventStream {
      const name = `turn ${turns++}`;
      const out = new AssistantMessageEventStream();
      steps
        .run(name, async (limit) => {
          const { signal: _signal, ...rest } = options ?? {};
          try {
            const turn = model.stream(context, { ...rest, ...(limit !== undefined && { signal: limit }) });
            return (await untilAborted(turn.result(), limit)) as AssistantMessage;
          } catch (error) {
            // a stream that broke its contract: recorded as a failed turn, not retried for ever
            return failed(model, error);
          }
        })
        .then(
          (message: AssistantMessage) => play(out, message),
          // the engine failed the step (the action's own errors are caught inside it): `steps.failed`
          // fails the run; the turn ends as aborted so the loop stops and asks no more
          () => play(out, aborted(model)),
        );
      return out;
    },
  };
}

/** Plays a recorded turn into `out`: `start`, then `done` or `error` with the whole message. */
function play(out: AssistantMessageEventStream, message: AssistantMessage): void {
  out.push({ type: "start", partial: message });
  if (message.stopReason === "error" || message.stopReason === "aborted") {
    out.push({ type: "error", reason: message.stopReason, error: message });
  } else {
    out.push({ type: "done", reason: message.stopReason, message });
  }
}

/** The answer of a turn whose step the engine failed: the run ends with the engine's error instead. */
function aborted(model: Model): AssistantMessage {
  return assistantMessage([], "aborted", { provider: model.provider, model: model.id });
}

/** The error answer of a turn whose stream ended without one. */
function failed(model: Model, error: unknown): AssistantMessage {
  const why = error instanceof Error ? error.message : String(error);
  return assistantMessage([], "error", {
    provider: model.provider,
    model: model.id,
    errorMessage: `The model failed: ${why}`,
  });
}
