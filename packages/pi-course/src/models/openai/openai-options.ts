/**
 * The optional request fields of Chat Completions that users of OpenAI-compatible servers ask
 * for: which tool the model must (or must not) call, parallel calls, reasoning effort, stop
 * sequences, a seed, and `extraBody` for server-specific fields (llama.cpp's `cache_prompt` or
 * `grammar`, vLLM's `guided_json`, OpenRouter's `provider`/`transforms`, …).
 *
 * `applyRequestOptions` adds them to a request body built by `toChatCompletionsRequest`:
 * - `toolChoice` and `parallelToolCalls` are sent only when the request has tools (servers
 *   refuse them otherwise); a named tool choice must name one of the request's tools;
 * - `extraBody` is deep-copied into the body, and may not set a field the adapter sets itself
 *   (`model`, `messages`, `max_tokens`, …): that is refused with the field's name, never
 *   silently overwritten either way.
 * Misuse throws a `TypeError` saying what to change.
 */
import type { Context } from "../../types.js";

/** Whether and which tool the model must call. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** The optional fields; all default to the server's own defaults (nothing is sent). */
export interface ChatRequestOptions {
  /** `tool_choice`: `auto`, `none`, `required`, or `{ name }` to force one tool. */
  toolChoice?: ToolChoice;
  /** `parallel_tool_calls`: `false` asks for at most one call per turn. */
  parallelToolCalls?: boolean;
  /** `reasoning_effort` for reasoning models (`minimal`, `low`, `medium`, `high`, or the server's own). */
  reasoningEffort?: string;
  /** `stop`: one or several sequences that end the answer. */
  stop?: string | string[];
  /** `seed`: best-effort determinism, where the server supports it. */
  seed?: number;
  /** Server-specific fields, merged into the body as they are (deep-copied). */
  extraBody?: Record<string, unknown>;
}

/** The optional fields as the wire names them (part of `ChatCompletionsRequest`). */
export interface WireOptionalFields {
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
  parallel_tool_calls?: boolean;
  reasoning_effort?: string;
  stop?: string | string[];
  seed?: number;
}

/** The body with the optional fields added (a new object; `request` is not changed). */
export function applyRequestOptions<Request extends WireOptionalFields>(
  request: Request,
  context: Context,
  options: ChatRequestOptions,
): Request {
  const out: Request = { ...request };
  const tools = context.tools ?? [];
  if (options.toolChoice !== undefined && tools.length > 0) {
    const choice = options.toolChoice;
    if (typeof choice === "object") {
      if (!tools.some((tool) => tool.name === choice.name)) {
        throw new TypeError(
          `toolChoice names the tool "${choice.name}", which is not among this request's tools ` +
            `(${tools.map((tool) => tool.name).join(", ")}). Name one of them, or use "required".`,
        );
      }
      out.tool_choice = { type: "function", function: { name: choice.name } };
    } else {
      out.tool_choice = choice;
    }
  }
  if (options.parallelToolCalls !== undefined && tools.length > 0) out.parallel_tool_calls = options.parallelToolCalls;
  if (options.reasoningEffort !== undefined) out.reasoning_effort = options.reasoningEffort;
  if (options.stop !== undefined) out.stop = Array.isArray(options.stop) ? [...options.stop] : options.stop;
  if (options.seed !== undefined) out.seed = options.seed;
  for (const [key, value] of Object.entries(options.extraBody ?? {})) {
    if (key in out) {
      throw new TypeError(
        `extraBody.${key} would replace a field the adapter sets itself; use the adapter's own option ` +
          `for it (e.g. maxTokens for max_tokens), or leave it out.`,
      );
    }
    (out as unknown as Record<string, unknown>)[key] = structuredClone(value);
  }
  return out;
}

/** Throws a `TypeError` for an option that can never make a valid request (checked once, up front). */
export function checkRequestOptions(options: ChatRequestOptions, who: string): void {
  const choice = options.toolChoice;
  if (
    choice !== undefined &&
    choice !== "auto" &&
    choice !== "none" &&
    choice !== "required" &&
    !(typeof choice === "object" && choice !== null && typeof choice.name === "string" && choice.name !== "")
  ) {
    throw new TypeError(
      `${who}: toolChoice must be "auto", "none", "required" or { name: "<tool>" }, got ${JSON.stringify(choice)}.`,
    );
  }
  if (options.seed !== undefined && !Number.isSafeInteger(options.seed)) {
    throw new TypeError(`${who}: seed must be an integer, got ${String(options.seed)}.`);
  }
  const stop = options.stop;
  if (
    stop !== undefined &&
    typeof stop !== "string" &&
    !(Array.isArray(stop) && stop.every((s) => typeof s === "string"))
  ) {
    throw new TypeError(`${who}: stop must be a string or an array of strings.`);
  }
  const extra = options.extraBody;
  if (extra !== undefined && (typeof extra !== "object" || extra === null || Array.isArray(extra))) {
    throw new TypeError(`${who}: extraBody must be a plain object of extra request fields.`);
  }
  for (const reserved of ["model", "messages", "stream", "stream_options", "tools"]) {
    if (extra !== undefined && reserved in extra) {
      throw new TypeError(`${who}: extraBody.${reserved} would replace a field the adapter sets itself; leave it out.`);
    }
  }
}
