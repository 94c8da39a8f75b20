/**
 * Chapter 18 in the session's tree (`/tree`, the session page): where the model or the thinking
 * level changed (`model_change`: `/model`, `/thinking`), which real model answered under a
 * virtual model (`model_route`), and what an answer cost.
 *
 * The model entries are not nodes of the tree (they are settings, not messages, and the tree's
 * numbers stay those of the messages): they are marks (`MODEL_PAGE_PART`, listed in
 * page-parts.ts), drawn between the nodes where they happened. The texts are raw: the caller
 * makes them safe for where they go.
 */
import { conversationCost, formatConversationCost, formatDollars } from "../model-choice/cost.js";
import type { AgentMessage, AssistantMessage } from "../types.js";
import type { ModelChangeEntry, ModelRouteEntry } from "../session/types.js";

/** A model entry of the tree. */
export type ModelEntry = ModelChangeEntry | ModelRouteEntry;

/** Whether `entry` is a model entry (a `model_change` or a `model_route`). */
export function isModelEntry(entry: { type: string }): entry is ModelEntry {
  return entry.type === "model_change" || entry.type === "model_route";
}

/**
 * One line for a model entry: `model → gpt-4o · thinking high` for a choice, and for a route
 * `answered by gpt-4o (openai-compatible) for gpt-4o-mini,gpt-4o`, with `, after gpt-4o-mini
 * failed (Overloaded)` when models were skipped.
 */
export function modelMarkText(entry: ModelEntry): string {
  if (entry.type === "model_change") return `model → ${entry.model} · thinking ${entry.thinking}`;
  const skipped = Array.isArray(entry.skipped) ? entry.skipped : [];
  const after =
    skipped.length === 0
      ? ""
      : `, after ${skipped.map((s) => s.model).join(" and ")} failed (${skipped.map((s) => s.error).join("; ")})`;
  return `answered by ${entry.answeredBy} (${entry.provider}) for ${entry.model}${after}`;
}

/**
 * What an assistant message cost, as a person reads it: `$0.0012` from its `cost`; `cost
 * unknown` when it used tokens and has no `cost` (its price is unknown: never shown as zero);
 * undefined when it has neither (nothing was used, nothing to say).
 */
export function answerCostText(message: { cost?: unknown; usage?: unknown }): string | undefined {
  const cost = message.cost as { total?: unknown } | undefined;
  if (typeof cost?.total === "number" && Number.isFinite(cost.total)) return formatDollars(cost.total);
  const usage = (message.usage ?? {}) as { input?: unknown; output?: unknown };
  const used =
    (typeof usage.input === "number" ? usage.input : 0) + (typeof usage.output === "number" ? usage.output : 0);
  return used > 0 ? "cost unknown" : undefined;
}

/**
 * The model catalogue's part of the tree and the page (see page-parts.ts): model entries as marks, an
 * answer's cost on its header, and the whole session's cost (a lower bound, said so, when some
 * answers have no price).
 */
export const MODEL_PAGE_PART = {
  markClass: "model-mark",
  mark: (entry: { type: string }): string | undefined => (isModelEntry(entry) ? modelMarkText(entry) : undefined),
  answerNote(message: AssistantMessage) {
    const text = answerCostText(message);
    return text === undefined ? undefined : { text, className: "cost", title: "priced from the model catalogue" };
  },
  sessionNote(messages: readonly AgentMessage[]) {
    const cost = conversationCost(messages);
    if (cost.priced + cost.unpriced === 0) return undefined;
    return {
      text: `Cost of the whole session: ${formatConversationCost(cost)}`,
      className: "totals",
      id: "session-cost",
    };
  },
};
