/**
 * Virtual models (chapter 18): selection apart from dispatch. A virtual model is a `Model` whose
 * `stream()` chooses, per request, which real models to try (`route`), then dispatches to them
 * in order: the next one only when the one before failed **before its answer started** (its first
 * event is the failure) with a retryable error (rate limit, overloaded, 5xx, connection refused:
 * `errorDetails.retryable`).
 * Every model but the last is asked with `maxRetries: 0`, so it falls back at once instead of
 * retrying first (waiting out a `Retry-After`); the last one retries as it is configured to.
 * Once a model has started its answer (a `start` event), that model's answer is the answer,
 * whatever happens after, even an overload before any content (Anthropic's in-stream
 * `overloaded_error`): what reached the caller is never thrown away for another model.
 *
 * The answer records the real model that gave it (`provider`, `model` are the real model's);
 * when earlier models were skipped, its diagnostics say `fell back from A to B (A: why)`, and
 * `onRoute` hears the route of every request. An abort is never a reason to fall back. When every
 * model failed, the answer is the last failure, its diagnostics naming the ones before.
 */
import { AssistantMessageEventStream } from "../event-stream.js";
import type { Model, StreamOptions } from "../model.js";
import type { AssistantMessage, Context, ModelEvent } from "../types.js";

/** The route one request took: the model that answered, and the models skipped before it. */
export interface RouteReport {
  /** The real model whose answer this is (the last one tried when all failed). */
  answeredBy: Model;
  /** The models that failed before their first byte, in order, with their error text. */
  skipped: { model: Model; error: string }[];
}

/** How a virtual model chooses. */
export interface VirtualModelOptions {
  /** The virtual model's id (e.g. `"gpt-4o-mini,gpt-4o"` or a name from models.json). */
  id: string;
  /** Defaults to `"virtual"`. */
  provider?: string;
  /** The real models to try for this request, in order (at least one). Written by the application. */
  route(context: Context, options: StreamOptions): readonly Model[];
  /** Hears the route of every request, once its answer is final. */
  onRoute?(report: RouteReport): void;
}

/** A virtual model (see the module comment). */
export function createVirtualModel(options: VirtualModelOptions): Model {
  return {
    provider: options.provider ?? "virtual",
    id: options.id,
    stream(context: Context, call: StreamOptions = {}): AssistantMessageEventStream {
      const out = new AssistantMessageEventStream();
      dispatch(options, context, call, out).catch((error: unknown) => {
        // Unreachable by design (the route and the models never throw past here); still, end the turn.
        out.push({ type: "error", reason: "error", error: routeFailure(options, String(error)) });
      });
      return out;
    },
  };
}

/** Falls back over `models` in order (a virtual model whose route is always `models`). */
export function createFallbackModel(
  models: readonly Model[],
  options: { id?: string; onRoute?: (report: RouteReport) => void } = {},
): Model {
  if (models.length === 0) throw new TypeError("createFallbackModel: give at least one model to try.");
  return createVirtualModel({
    id: options.id ?? models.map((m) => m.id).join(","),
    provider: "fallback",
    route: () => models,
    ...(options.onRoute !== undefined && { onRoute: options.onRoute }),
  });
}

async function dispatch(
  options: VirtualModelOptions,
  context: Context,
  call: StreamOptions,
  out: AssistantMessageEventStream,
): Promise<void> {
  // #region lab 18.4 dispatch
  let models: readonly Model[];
  try {
    models = options.route(context, call);
  } catch (error) {
    return out.push({
      type: "error",
      reason: "error",
      error: routeFailure(options, `the route failed: ${String(error)}`),
    });
  }
  if (models.length === 0) {
    return out.push({ type: "error", reason: "error", error: routeFailure(options, "the route chose no model") });
  }
  const skipped: RouteReport["skipped"] = [];
  for (const [i, model] of models.entries()) {
    const last = i === models.length - 1;
    let committed = false;
    // Every model but the last is tried once: a retryable failure moves on to the next at once.
    for await (const event of model.stream(context, last ? call : { ...call, maxRetries: 0 })) {
      if (
        !committed &&
        event.type === "error" &&
        !last &&
        event.reason === "error" &&
        event.error.errorDetails?.retryable
      ) {
        skipped.push({ model, error: event.error.errorMessage ?? "failed" });
        break; // nothing of this model reached the caller: try the next
      }
      committed = true;
      out.push(noted(event, skipped, model));
      if (event.type === "done" || event.type === "error") {
        options.onRoute?.({ answeredBy: model, skipped });
        return;
      }
    }
    if (committed) return;
  }
  // #endregion
}

/** The terminal event's message with the skipped models in its diagnostics. */
function noted(event: ModelEvent, skipped: RouteReport["skipped"], model: Model): ModelEvent {
  if (skipped.length === 0 || (event.type !== "done" && event.type !== "error")) return event;
  const note = `fell back from ${skipped.map((s) => s.model.id).join(" and ")} to ${model.id} (${skipped
    .map((s) => `${s.model.id}: ${s.error}`)
    .join("; ")})`;
  const message = event.type === "done" ? event.message : event.error;
  const withNote: AssistantMessage = { ...message, diagnostics: [...(message.diagnostics ?? []), note] };
  return event.type === "done" ? { ...event, message: withNote } : { ...event, error: withNote };
}

function routeFailure(options: VirtualModelOptions, why: string): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    provider: options.provider ?? "virtual",
    model: options.id,
    usage: { input: 0, output: 0, totalTokens: 0 },
    stopReason: "error",
    errorMessage: `Virtual model ${options.id}: ${why}`,
    errorDetails: { kind: "request", retryable: false },
    timestamp: Date.now(),
  };
}
