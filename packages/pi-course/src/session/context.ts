/**
 * The context budget (chapter 11): what the model sees of a session path, within a token budget.
 *
 * The history never changes; the context is rebuilt from it for every model call:
 *
 * 1. `transcriptOf(path)`: the messages of a path (root..leaf). With a compaction on the path,
 *    the newest one stands in for everything before its `firstKeptEntryId`: its summary, as a
 *    user message, then the entries from the first kept one on. Older compactions and labels
 *    are not part of the context (the newest summary already folds in the older ones).
 * 2. `projectMessages(messages, options)`: drop whole interactions (see interactions.ts) from the
 *    oldest until the system prompt and the rest fit in `budget` tokens. The system prompt and
 *    the newest interaction (so the newest user message) are always kept; if even they do not
 *    fit, the result says so in `overflow`, with a reason the caller can show, and keeps them:
 *    nothing is ever cut silently, and an interaction is never cut in half.
 *
 * Custom messages (the app's own roles) are kept in place, inside the interaction they belong to;
 * the loop's `convertToLlm` later converts or drops them. The default estimator counts them at
 * the length of their JSON (see token-estimate.ts), which is safe when `convertToLlm` drops them.
 */
import { groupInteractions } from "./interactions.js";
import { countTokens, estimateTokens } from "./token-estimate.js";
import type { TokenEstimator } from "./token-estimate.js";
import type { AgentContext, AgentMessage, AgentTool, UserMessage } from "../types.js";
import type { CompactionEntry, SessionEntry } from "./types.js";

/** How to project. */
export interface ProjectionOptions {
  /** Tokens for the system prompt and the messages. Leave room for tools and the answer yourself. */
  budget: number;
  systemPrompt?: string;
  /** Copied to the context as they are (not counted: subtract their cost from `budget`). */
  tools?: AgentTool<any, any>[];
  /** Defaults to `estimateTokens` (chars/4, scaled to the newest trusted usage). */
  estimator?: TokenEstimator;
  /** Assistant usage is trusted from this message index on (default 0); see `TokenEstimateInput`. */
  usageFrom?: number;
}

/** Why a projection does not fit its budget: data the caller can show or act on. */
export interface ContextOverflow {
  /** Estimated tokens of the system prompt. */
  systemPromptTokens: number;
  /** Estimated tokens of the newest interaction (it starts at the newest user message). */
  newestInteractionTokens: number;
  /** Messages in the newest interaction. */
  newestInteractionMessages: number;
  budget: number;
  /** A sentence for a person: what does not fit, by how much, and what to do. */
  message: string;
}

/** What the model gets, and what was left out. */
export interface ContextProjection {
  /** The system prompt and the kept messages (a suffix of the transcript), and `tools` if given. */
  context: AgentContext;
  /** Estimated tokens of the system prompt and the kept messages. */
  tokens: number;
  budget: number;
  /** Index in the transcript of the first kept message (`messages.length` when there is none). */
  firstKept: number;
  /** Interactions dropped from the oldest. */
  droppedInteractions: number;
  /** Set when the system prompt and the newest interaction alone exceed `budget`; then nothing else is kept. */
  overflow?: ContextOverflow;
}

/**
 * Projects a transcript onto `budget` tokens by dropping whole interactions from the oldest.
 * Pure: same input, same output; the input is not changed (kept messages are the same objects).
 * Throws a `TypeError` for a bad budget, a malformed transcript (see `openSpans`) or an
 * estimator that breaks its contract.
 */
export function projectMessages(messages: readonly AgentMessage[], options: ProjectionOptions): ContextProjection {
  const { budget, systemPrompt, tools, estimator = estimateTokens, usageFrom = 0 } = options;
  if (typeof budget !== "number" || !(budget >= 0) || budget === Infinity) {
    throw new TypeError(`projectMessages: budget must be a finite number of tokens >= 0, got ${String(budget)}`);
  }
  // #region lab 11.2 projectMessages
  const groups = groupInteractions(messages);
  const counts = countTokens(estimator, { systemPrompt, messages, usageFrom }, "projectMessages");
  // Tokens from each interaction to the end, newest first: keep the oldest start that fits.
  let tokens = counts.systemPrompt;
  let kept = groups.length;
  for (let g = groups.length - 1; g >= 0; g--) {
    let cost = 0;
    for (let i = groups[g]!.start; i < groups[g]!.end; i++) cost += counts.messages[i]!;
    const isNewest = g === groups.length - 1;
    if (!isNewest && tokens + cost > budget) break;
    tokens += cost;
    kept = g;
  }
  const firstKept = kept < groups.length ? groups[kept]!.start : messages.length;
  const context: AgentContext = { messages: messages.slice(firstKept) };
  if (systemPrompt !== undefined) context.systemPrompt = systemPrompt;
  if (tools !== undefined) context.tools = tools;
  const projection: ContextProjection = { context, tokens, budget, firstKept, droppedInteractions: kept };
  if (tokens > budget) {
    const newestInteractionTokens = tokens - counts.systemPrompt;
    const newestInteractionMessages = messages.length - firstKept;
    projection.overflow = {
      systemPromptTokens: counts.systemPrompt,
      newestInteractionTokens,
      newestInteractionMessages,
      budget,
      message:
        `the context needs ${tokens} tokens (system prompt ${counts.systemPrompt}, newest interaction ` +
        `${newestInteractionTokens} in ${newestInteractionMessages} messages), over the budget of ${budget} ` +
        `by ${tokens - budget}; nothing older is left to drop. Compact the session, shorten the system ` +
        `prompt, or raise the budget.`,
    };
  }
  return projection;
  // #endregion
}

/** The messages of a path as the model reads them, and which entry each came from. */
export interface Transcript {
  messages: AgentMessage[];
  /** The session entry each message came from (the summary comes from its compaction entry). */
  entryIds: string[];
  /** Index of the first message appended after the newest compaction (0 without one). */
  usageFrom: number;
  /** The newest compaction on the path, if any. */
  compaction?: CompactionEntry;
}

/**
 * The summary of a compaction as the message the model reads: a user message, so that what
 * follows (a user message, or a turn of the split interaction) reads as a continuation.
 * Its timestamp is the entry's, so the projection stays deterministic.
 */
export function summaryMessage(entry: Pick<CompactionEntry, "summary"> & { timestamp?: string }): UserMessage {
  const text =
    "Earlier parts of this conversation were condensed to save space. Here is the summary; " +
    `continue from it as if you remembered everything it describes.\n\n<summary>\n${entry.summary}\n</summary>`;
  const timestamp = Date.parse(entry.timestamp ?? "");
  return { role: "user", content: [{ type: "text", text }], timestamp: Number.isFinite(timestamp) ? timestamp : 0 };
}

/**
 * The deferred tools declared by the tool results of `path` before index `end` (`declaredTools`), in
 * order, each once: what a compaction condenses must not take them away from the model. None
 * before tools are deferred (chapter 15).
 */
function declaredBefore(path: readonly SessionEntry[], end: number): string[] {
  const names = new Set<string>();
  for (const entry of path.slice(0, end)) {
    if (entry.type !== "message" || entry.message.role !== "toolResult") continue;
    for (const name of entry.message.declaredTools ?? []) names.add(name);
  }
  return [...names];
}

/**
 * The messages of a path (root..leaf, as `pathToLeaf` returns it), starting from the newest
 * compaction's summary when there is one. Throws a `TypeError` when that compaction's
 * `firstKeptEntryId` is neither on the path before it nor its own id (the path is not the one
 * the compaction was made on).
 */
export function transcriptOf(path: readonly SessionEntry[]): Transcript {
  // #region lab 11.3 transcriptOf
  let c = -1;
  for (let i = path.length - 1; i >= 0; i--) {
    if (path[i]!.type === "compaction") {
      c = i;
      break;
    }
  }
  // The arrays are made at their final size, not grown by push: past ~16k elements V8 keeps an
  // array in its large-object space, where every regrowth copies it (a 100k push loop costs ~4x
  // a pre-sized one; see bench/11-context.bench.ts).
  let count = c < 0 ? 0 : 1;
  for (let i = 0; i < path.length; i++) if (path[i]!.type === "message") count++;
  const transcript: Transcript = { messages: new Array(count), entryIds: new Array(count), usageFrom: 0 };
  let filled = 0;
  const take = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const entry = path[i]!;
      if (entry.type !== "message") continue;
      transcript.messages[filled] = entry.message;
      transcript.entryIds[filled++] = entry.id;
    }
  };
  const trimmed = () => {
    transcript.messages.length = filled;
    transcript.entryIds.length = filled;
    return transcript;
  };
  if (c < 0) {
    take(0, path.length);
    return trimmed();
  }
  const compaction = path[c] as CompactionEntry;
  let firstKept = c; // "keep nothing before it" when it names itself
  if (compaction.firstKeptEntryId !== compaction.id) {
    firstKept = path.findIndex((e, i) => i < c && e.id === compaction.firstKeptEntryId);
    if (firstKept < 0) {
      throw new TypeError(
        `compaction entry "${compaction.id}": its firstKeptEntryId "${compaction.firstKeptEntryId}" is not on ` +
          `the path before it. Pass the path from the root to the leaf (pathToLeaf).`,
      );
    }
  }
  transcript.compaction = compaction;
  const summary = summaryMessage(compaction);
  const declared = declaredBefore(path, firstKept);
  if (declared.length > 0) summary.declaredTools = declared;
  transcript.messages[filled] = summary;
  transcript.entryIds[filled++] = compaction.id;
  take(firstKept, c);
  transcript.usageFrom = filled;
  take(c + 1, path.length);
  return trimmed();
  // #endregion
}

/**
 * Projects a session path onto a budget: `projectMessages(transcriptOf(path).messages)`, with
 * assistant usage trusted only after the newest compaction.
 */
export function projectContext(
  path: readonly SessionEntry[],
  options: Omit<ProjectionOptions, "usageFrom">,
): ContextProjection {
  const transcript = transcriptOf(path);
  return projectMessages(transcript.messages, { ...options, usageFrom: transcript.usageFrom });
}
