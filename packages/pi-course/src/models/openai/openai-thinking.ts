/**
 * A call's thinking level (`StreamOptions.thinking`) on the Chat Completions wire, as
 * `reasoning_effort`. The model of openai-compatible.ts applies it to each call that sets one.
 */
import type { ThinkingLevel } from "../../model.js";
import type { ChatRequestOptions } from "./openai-options.js";

/**
 * `options` with the thinking level of one call as `reasoning_effort`: `off` sends
 * none (the field is left out, also when `options.reasoningEffort` set one), every other level is
 * sent under its own name (`minimal`, `low`, `medium`, `high`). A new object; `options` is kept.
 */
export function withThinkingLevel<Options extends ChatRequestOptions>(options: Options, level: ThinkingLevel): Options {
  const { reasoningEffort: _replaced, ...rest } = options;
  return (level === "off" ? rest : { ...rest, reasoningEffort: level }) as Options;
}
