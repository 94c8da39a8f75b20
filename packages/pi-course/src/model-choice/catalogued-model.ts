/**
 * A physical model with what the catalogue knows of it (chapter 18), and a model at a thinking
 * level.
 *
 * - `catalogued(model, info)`: every final message gets its `cost` (priced by `info.prices`;
 *   none when the price is unknown), and a thinking level the model cannot use (the catalogue
 *   says it does not reason, or a models file says its server takes no thinking parameter) is not
 *   sent: the final message's diagnostics say it was ignored.
 * - `atThinkingLevel(model, level)`: every call is made with `thinking: level`, unless the
 *   caller's own options name a level.
 *
 * Both keep the `Model` contract: `stream()` returns at once and never throws, and the events
 * are the inner model's, in order; only the terminal event's message is a copy with more fields.
 */
import { AssistantMessageEventStream } from "../event-stream.js";
import type { Model, StreamOptions, ThinkingLevel } from "../model.js";
import type { AssistantMessage, Context, ModelEvent } from "../types.js";
import type { ModelInfo } from "./types.js";
import { costOf } from "./cost.js";

/** Forwards `inner`'s events into a new stream, the terminal message passed through `final`. */
export function relay(
  inner: AssistantMessageEventStream,
  final: (message: AssistantMessage) => AssistantMessage,
): AssistantMessageEventStream {
  const out = new AssistantMessageEventStream();
  void (async () => {
    for await (const event of inner) out.push(finishing(event, final));
  })();
  return out;
}

/**
 * The terminal event with its message passed through `final`. A throw there must not leave the
 * stream open forever: the turn ends as an `error` whose message says what failed.
 */
function finishing(event: ModelEvent, final: (message: AssistantMessage) => AssistantMessage): ModelEvent {
  if (event.type !== "done" && event.type !== "error") return event;
  const message = event.type === "done" ? event.message : event.error;
  try {
    const out = final(message);
    return event.type === "done" ? { ...event, message: out } : { ...event, error: out };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return {
      type: "error",
      reason: "error",
      error: { ...message, stopReason: "error", errorMessage: `finishing the answer failed: ${why}` },
    };
  }
}

/** The diagnostic of a thinking level that was not sent (`parameter`: the model reasons, but its server takes no level). */
export function thinkingIgnored(level: ThinkingLevel, id: string, parameter = false): string {
  return parameter
    ? `thinking level "${level}" ignored: the models file says ${id}'s server takes no thinking parameter (compat.supportsReasoningEffort: false)`
    : `thinking level "${level}" ignored: the model catalogue says ${id} does not reason`;
}

/** Whether a thinking level is not sent to the model `info` describes, and the diagnostic that says so. */
export function unsentThinking(level: ThinkingLevel | undefined, info: ModelInfo): string | undefined {
  if (level === undefined || level === "off" || !info.known) return undefined;
  if (!info.reasoning) return thinkingIgnored(level, info.id);
  return info.thinkingParameter === false ? thinkingIgnored(level, info.id, true) : undefined;
}

/** `model` with its cost and its thinking ability from `info` (see the module comment). */
export function catalogued(model: Model, info: ModelInfo): Model {
  return {
    provider: model.provider,
    id: model.id,
    stream(context: Context, options: StreamOptions = {}): AssistantMessageEventStream {
      const ignored = unsentThinking(options.thinking, info);
      const { thinking: _level, ...rest } = options;
      const inner = model.stream(context, ignored !== undefined ? rest : options);
      return relay(inner, (message) => {
        // (an unknown price is no cost at all: costOf is not even asked)
        const cost = info.prices === undefined ? undefined : costOf(message.usage, info.prices);
        const out: AssistantMessage = { ...message, ...(cost !== undefined && { cost }) };
        if (ignored !== undefined) out.diagnostics = [...(message.diagnostics ?? []), ignored];
        return out;
      });
    },
  };
}

/** `model` called at thinking `level` (a call's own `options.thinking` wins). */
export function atThinkingLevel(model: Model, level: ThinkingLevel): Model {
  // #region lab 18.3 atThinkingLevel
  return {
    provider: model.provider,
    id: model.id,
    stream: (context, options = {}) => model.stream(context, { ...options, thinking: options.thinking ?? level }),
  };
  // #endregion
}
