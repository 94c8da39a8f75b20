/**
 * What a later feature adds to the session's tree, its page and `/tree`, listed once in
 * `PAGE_PARTS` instead of written into tree.ts, page.ts and entry-html.ts:
 * - a **mark** for an entry that is not drawn as a node (not a message, not a compaction): one
 *   line between the nodes, where it happened (a setting changed, a model answered);
 * - a **note** on an assistant answer's header (what it cost);
 * - a **note** about the whole session, under the page's totals.
 *
 * Texts are raw: whoever draws them makes them safe for where they go (`escapeHtml`, `neutralize`).
 */
import type { SessionEntry } from "../session/types.js";
import type { AgentMessage, AssistantMessage } from "../types.js";
// #region ch18
import { MODEL_PAGE_PART } from "./model-marks.js";
// #endregion

/** A short text with the CSS class (and optional `id`, `title`) the page gives it. */
export interface PageNote {
  text: string;
  className: string;
  id?: string;
  title?: string;
}

/** One feature's part of the tree and the page; every member is optional. */
export interface PagePart {
  /** The class of this part's marks on the page (default `mark`). */
  markClass?: string;
  /** The mark of `entry`, or undefined when the entry is not this part's. */
  mark?(entry: SessionEntry): string | undefined;
  /** A note for an answer's header, or undefined. */
  answerNote?(message: AssistantMessage): PageNote | undefined;
  /** A note about the whole session (its shown messages in file order), or undefined. */
  sessionNote?(messages: readonly AgentMessage[]): PageNote | undefined;
}

/** The parts, in the order their notes are shown. */
export const PAGE_PARTS: readonly PagePart[] = [
  // #region ch18
  MODEL_PAGE_PART,
  // #endregion
];

/** An entry drawn as a mark: its text and the class of its part. */
export interface TreeMark {
  entry: SessionEntry;
  text: string;
  className: string;
}

/** The mark of `entry` (the first part that knows it), or undefined: the entry is not drawn. */
export function markOf(entry: SessionEntry): TreeMark | undefined {
  for (const part of PAGE_PARTS) {
    const text = part.mark?.(entry);
    if (text !== undefined) return { entry, text, className: part.markClass ?? "mark" };
  }
  return undefined;
}

/** The notes of every part for an answer's header. */
export function answerNotes(message: AssistantMessage): PageNote[] {
  return PAGE_PARTS.flatMap((part) => part.answerNote?.(message) ?? []);
}

/** The notes of every part about the whole session. */
export function sessionNotes(messages: readonly AgentMessage[]): PageNote[] {
  return PAGE_PARTS.flatMap((part) => part.sessionNote?.(messages) ?? []);
}
