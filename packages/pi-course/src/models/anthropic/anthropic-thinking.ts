/**
 * A call's thinking level (`StreamOptions.thinking`) on the Messages API, as a
 * `thinking` token budget. The model of anthropic.ts applies it to each call that sets one.
 */
import type { ThinkingLevel } from "../../model.js";
import type { AnthropicRequestOptions } from "./anthropic-wire.js";

/**
 * The thinking budget (tokens) of each level on the Messages API. The API's smallest budget is
 * 1024 tokens; `off` sends no `thinking` at all.
 */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<Exclude<ThinkingLevel, "off">, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
};

/**
 * `options` with the thinking level of one call: `off` removes `thinking`; any other
 * level sets `thinking.budgetTokens` from `ANTHROPIC_THINKING_BUDGETS` and raises `maxTokens` by
 * the budget, so the answer keeps the room `maxTokens` gave it (the API counts thinking inside
 * `max_tokens`, and refuses a budget that is not below it). A new object; `options` is kept.
 */
export function withAnthropicThinking<Options extends AnthropicRequestOptions>(
  options: Options,
  level: ThinkingLevel,
): Options {
  const { thinking: _replaced, ...rest } = options;
  if (level === "off") return rest as Options;
  const budgetTokens = ANTHROPIC_THINKING_BUDGETS[level];
  return { ...rest, thinking: { budgetTokens }, maxTokens: options.maxTokens + budgetTokens } as Options;
}
