/**
 * Cost (chapter 18): an assistant message's usage priced from the catalogue, and a
 * conversation's total.
 *
 * `Usage.input` counts every prompt token, the cached ones included (chapter 05). So the input
 * price applies to `input - cacheRead - cacheWrite`, and the cached parts get their own prices;
 * a provider with no cache price (absent in `ModelPrices`) has its cached tokens priced as
 * input. Prices are per million tokens. An unknown price gives no cost at all: never a zero.
 */
import { formatDollars } from "../base/dollars.js";
import type { AgentMessage, AssistantMessage, Cost, Usage } from "../types.js";
import type { ModelPrices } from "./types.js";

/** The cost of `usage` at `prices`, in dollars; undefined when `prices` is (an unknown price). */
export function costOf(usage: Usage, prices: ModelPrices | undefined): Cost | undefined {
  // #region lab 18.2 costOf
  if (prices === undefined) return undefined;
  const cacheRead = usage.cacheRead ?? 0;
  const cacheWrite = usage.cacheWrite ?? 0;
  const fresh = Math.max(0, usage.input - cacheRead - cacheWrite);
  const perToken = (price: number) => price / 1_000_000;
  const cost = {
    input: fresh * perToken(prices.input),
    output: usage.output * perToken(prices.output),
    cacheRead: cacheRead * perToken(prices.cacheRead ?? prices.input),
    cacheWrite: cacheWrite * perToken(prices.cacheWrite ?? prices.input),
  };
  return { ...cost, total: cost.input + cost.output + cost.cacheRead + cost.cacheWrite };
  // #endregion
}

/** A conversation's cost: the sum of the priced answers, and how many answers had no price. */
export interface ConversationCost {
  /** Dollars, over the answers that have a `cost`. */
  total: number;
  /** Answers that have a `cost`. */
  priced: number;
  /** Answers that used tokens but have no `cost` (an unknown price): the total is a lower bound. */
  unpriced: number;
}

/** Adds up the `cost` of every assistant message of `messages`. */
export function conversationCost(messages: readonly AgentMessage[]): ConversationCost {
  const sum: ConversationCost = { total: 0, priced: 0, unpriced: 0 };
  for (const message of messages) {
    if (!("role" in message) || message.role !== "assistant") continue;
    const answer = message as AssistantMessage;
    if (answer.cost !== undefined) {
      sum.total += answer.cost.total;
      sum.priced += 1;
    } else if (answer.usage.input + answer.usage.output > 0) {
      sum.unpriced += 1;
    }
  }
  return sum;
}

/**
 * A conversation's cost as a person reads it: `$0.0123`, `$0.0123 + unknown (2 answers without
 * a price)`, or `unknown (3 answers without a price)`; `$0` when nothing was used.
 */
export function formatConversationCost(cost: ConversationCost): string {
  const unknown = `unknown (${cost.unpriced} answer${cost.unpriced === 1 ? "" : "s"} without a price)`;
  if (cost.unpriced === 0) return formatDollars(cost.total);
  if (cost.priced === 0) return unknown;
  return `${formatDollars(cost.total)} + ${unknown}`;
}

export { formatDollars };
