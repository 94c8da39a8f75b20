/**
 * Compaction (chapter 11): replace the old part of a session's context with a summary, without
 * changing its history.
 *
 * `compact(session, options)` reads the path to the leaf, keeps the newest `keepRecentTokens`
 * (about) of it verbatim, asks a model for a structured summary of the rest (merged with the
 * previous summary, if the path was compacted before), and appends one `compaction` entry. Every
 * original entry stays in the session; `transcriptOf` then starts the context from the summary.
 *
 * The cut is made only where nothing is in flight: never at a tool result, never between a call
 * and its result (see `openSpans`), so the kept part starts with a user, assistant or custom
 * message and every result in it has its call. A cut inside an interaction is allowed (a long
 * tool loop can be compacted too); the summary then says what was under way.
 *
 * Failure is data: a summary that failed (model error or abort, cut off at `length`, a tool call
 * in the answer, empty), a path with nothing to compact, a session that moved on while the
 * summary was written, or an append that failed appends nothing and comes back as
 * `{ ok: false, reason }`. Only caller misuse throws.
 */
import { transcriptOf, summaryMessage } from "./context.js";
import { openSpans } from "./interactions.js";
import { countTokens, estimateTokens } from "./token-estimate.js";
import type { TokenEstimator } from "./token-estimate.js";
import type { AgentMessage } from "../types.js";
import type { CompactionEntry, SessionEntry } from "./types.js";
import type { Model } from "../model.js";
import { filesTouched, formatFilesSection, serializeConversation, summaryRequest } from "./summary-prompt.js";

/** A compaction entry as `compact` hands it to the session (the session sets `id` and `timestamp`). */
export type CompactionDraft = Omit<CompactionEntry, "id" | "timestamp">;

/**
 * What `compact` needs of a session: the leaf, the path to it, and appending one entry.
 * A chapter 10 `SessionFile` fits it.
 */
export interface CompactableSession {
  /**
   * The entry the conversation continues from (its id, or the entry itself, as `SessionFile.leaf`
   * gives it); `null` or `undefined` when the session is empty.
   */
  readonly leaf: string | { readonly id: string } | null | undefined;
  /** The entries from the root to `id`, in order. */
  pathToLeaf(id: string): readonly SessionEntry[];
  /** Contract: appends the entry (a child of `entry.parentId`) and returns its new id; may reject. */
  append(entry: CompactionDraft): string | Promise<string>;
}

/** What a summarizer is asked to summarise. */
export interface SummaryInput {
  /** The messages being cut (the previous summary excluded), oldest first. */
  messages: AgentMessage[];
  /** The newest earlier compaction's summary, to merge in. */
  previousSummary?: string;
  /** Extra focus from the caller, e.g. "keep the failing test names". */
  instructions?: string;
  model: Model;
  signal?: AbortSignal;
}

/**
 * Contract: resolves with the summary text (Markdown), or rejects/throws with an error that says
 * why it could not; the compaction then appends nothing and reports that error's message.
 */
export type Summarizer = (input: SummaryInput) => string | Promise<string>;

export interface CompactOptions {
  /** The model asked for the summary (by the default summarizer). */
  model: Model;
  /** About how many tokens of the newest messages to keep verbatim (>= 0). */
  keepRecentTokens: number;
  /** Replaces the default request to `model` (see `summarizeWithModel`). */
  summarize?: Summarizer;
  /** Extra focus for the summary. */
  instructions?: string;
  /** Counted in `tokensBefore`/`tokensAfter`, as the projection counts it. */
  systemPrompt?: string;
  /** Defaults to `estimateTokens`. */
  estimator?: TokenEstimator;
  signal?: AbortSignal;
}

/** Why nothing was appended. */
export interface CompactionFailure {
  kind: "nothing_to_compact" | "summary_failed" | "leaf_moved" | "append_failed";
  /** A sentence for a person. */
  message: string;
}

export type CompactionResult =
  | {
      ok: true;
      /** The id the session gave the new compaction entry. */
      entryId: string;
      entry: CompactionDraft;
      /** Messages summarised (the previous summary not counted). */
      summarizedMessages: number;
      /** Messages kept verbatim after the summary. */
      keptMessages: number;
    }
  | { ok: false; reason: CompactionFailure };

/**
 * Compacts the path to `session.leaf`; see the module comment. Rejects only for caller misuse:
 * a bad `keepRecentTokens`, a malformed path (the `TypeError` of `transcriptOf` / `openSpans`),
 * an estimator that breaks its contract.
 */
export async function compact(session: CompactableSession, options: CompactOptions): Promise<CompactionResult> {
  const { keepRecentTokens, estimator = estimateTokens, systemPrompt } = options;
  if (typeof keepRecentTokens !== "number" || !(keepRecentTokens >= 0) || keepRecentTokens === Infinity) {
    throw new TypeError(`compact: keepRecentTokens must be a finite number >= 0, got ${String(keepRecentTokens)}`);
  }
  // #region lab 11.4 compact
  const fail = (kind: CompactionFailure["kind"], message: string): CompactionResult => ({
    ok: false,
    reason: { kind, message },
  });
  const leaf = leafId(session);
  if (leaf === undefined) return fail("nothing_to_compact", "the session is empty.");
  const path = session.pathToLeaf(leaf);
  if (path.at(-1)?.type === "compaction") {
    return fail("nothing_to_compact", "the leaf is already a compaction; nothing was added since.");
  }
  const { messages, entryIds, usageFrom, compaction } = transcriptOf(path);
  const counts = countTokens(estimator, { systemPrompt, messages, usageFrom }, "compact");
  const cut = findCut(messages, counts.messages, keepRecentTokens, compaction ? 2 : 1);
  if (typeof cut === "string") return fail("nothing_to_compact", cut);

  const cutMessages = messages.slice(compaction ? 1 : 0, cut);
  let text: string;
  try {
    text = await (options.summarize ?? summarizeWithModel)({
      messages: cutMessages,
      ...(compaction && { previousSummary: compaction.summary }),
      ...(options.instructions !== undefined && { instructions: options.instructions }),
      model: options.model,
      ...(options.signal && { signal: options.signal }),
    });
    if (typeof text !== "string") throw new Error(`the summarizer returned ${typeof text}, not text`);
    if (text.trim() === "") throw new Error("the summary is empty");
  } catch (error) {
    return fail(
      "summary_failed",
      `no summary, nothing appended: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const summary = text.trim() + formatFilesSection(filesTouched(cutMessages, compaction?.summary));

  const kept = messages.slice(cut);
  const after = [summaryMessage({ summary }), ...kept];
  const countsAfter = countTokens(estimator, { systemPrompt, messages: after, usageFrom: after.length }, "compact");
  const entry: CompactionDraft = {
    type: "compaction",
    parentId: leaf,
    summary,
    firstKeptEntryId: entryIds[cut]!,
    tokensBefore: sum(counts.systemPrompt, counts.messages),
    tokensAfter: sum(countsAfter.systemPrompt, countsAfter.messages),
  };
  // The summary took time: if the conversation went on meanwhile, a compaction of the old leaf
  // would branch away from the new entries (and a leaf moved to it would hide them).
  if (leafId(session) !== leaf) {
    return fail(
      "leaf_moved",
      `the session moved on while the summary was written (leaf "${leaf}" is now "${String(leafId(session))}"); nothing appended. Compact again.`,
    );
  }
  let entryId: string;
  try {
    entryId = await session.append(entry);
  } catch (error) {
    return fail(
      "append_failed",
      `the session refused the compaction entry: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return { ok: true, entryId, entry, summarizedMessages: cutMessages.length, keptMessages: kept.length };
  // #endregion
}

/**
 * Where to cut: walking back from the newest message until `keepRecentTokens` are kept, then the
 * first cut point at or after there (else the last one before it). A cut point is an index
 * `>= min` with no call/result pair across it and no tool result at it. A string says why there
 * is none.
 */
export function findCut(
  messages: readonly AgentMessage[],
  tokens: readonly number[],
  keepRecentTokens: number,
  min: number,
): number | string {
  // #region lab 11.4 findCut
  // a tool result always lies inside its call's span, so this also never cuts at a result
  const open = openSpans(messages);
  const valid = (i: number) => !open[i];
  let kept = 0;
  let target = -1;
  for (let i = messages.length - 1; i >= min; i--) {
    kept += tokens[i]!;
    if (kept >= keepRecentTokens) {
      target = i;
      break;
    }
  }
  if (target < 0) {
    return `the ${messages.length - min} messages that could be cut hold ${kept} tokens, within keepRecentTokens (${keepRecentTokens}).`;
  }
  for (let i = target; i < messages.length; i++) if (valid(i)) return i;
  for (let i = target - 1; i >= min; i--) if (valid(i)) return i;
  return "there is no place to cut: every message after the first is inside a tool call and its results.";
  // #endregion
}

/** The default summarizer: one request to `input.model` with the prompt of summary-prompt.ts. */
export async function summarizeWithModel(input: SummaryInput): Promise<string> {
  const request = summaryRequest(serializeConversation(input.messages), input.previousSummary, input.instructions);
  const message = await input.model.stream(request, input.signal ? { signal: input.signal } : {}).result();
  if (message.stopReason === "error" || message.stopReason === "aborted") {
    throw new Error(`the model failed (${message.stopReason}): ${message.errorMessage ?? "no message"}`);
  }
  if (message.stopReason === "length") throw new Error("the summary was cut off at the model's length limit");
  if (message.content.some((block) => block.type === "toolCall")) {
    throw new Error("the model answered with a tool call instead of a summary");
  }
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function sum(first: number, rest: readonly number[]): number {
  let total = first;
  for (const n of rest) total += n;
  return total;
}

/** The id of the session's leaf, whichever form it gives; `undefined` when empty. */
function leafId(session: CompactableSession): string | undefined {
  const leaf = session.leaf;
  if (leaf === null || leaf === undefined) return undefined;
  return typeof leaf === "string" ? leaf : leaf.id;
}
