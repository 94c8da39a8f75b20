/**
 * The session layer's vocabulary: the lines of a session file, written whole (the compaction,
 * model and durable-run entries are read and written from the chapters that add them). Plain JSON data.
 */
import type { ThinkingLevel } from "../model.js";
import type { AgentMessage, AgentToolResult } from "../types.js";

/**
 * The first line of a session file. Not an entry of the tree: it says what the file is.
 * Contract: `version` is the format version of the lines that follow; a reader refuses a
 * version newer than it knows, with what to do.
 */
export interface SessionHeader {
  type: "session";
  /** The format version of the file. */
  version: number;
  /** The session's id (unique among the sessions of one folder). */
  id: string;
  /** When the session was created (ISO 8601). */
  timestamp: string;
  /** The working folder the session ran in (absolute). */
  cwd: string;
}

/** What every entry of a session tree has. */
export interface SessionEntryBase {
  /** Short, unique within the file, made by the component that appends. */
  id: string;
  /** The entry this one continues; `null` for a root. Branching is appending a child of an older entry. */
  parentId: string | null;
  /** When the entry was appended (ISO 8601). */
  timestamp: string;
}

/** One message of the transcript (custom messages included). */
export interface MessageEntry extends SessionEntryBase {
  type: "message";
  message: AgentMessage;
}

/** A name for an entry (a bookmark); `label: null` clears it. Not part of the model's context. */
export interface LabelEntry extends SessionEntryBase {
  type: "label";
  /** The entry named. */
  targetId: string;
  label: string | null;
}

/**
 * Not an entry: a line that says the line before it holds the torn bytes of an earlier crash
 * (`offset` and `length` in bytes), kept in the file as they were. It is written once, by the
 * first append after the torn tail was found; readers report that line and skip it.
 */
export interface SessionTornMark {
  type: "torn";
  /** Byte offset of the torn line in the file. */
  offset: number;
  /** Its length in bytes (without the newline written after it). */
  length: number;
  /** When the mark was written (ISO 8601). */
  timestamp: string;
}

/**
 * What compaction leaves in the tree: a summary of everything on the path before
 * `firstKeptEntryId`. The entries themselves stay in the file; the projection of the path
 * starts from the summary, then the entries from `firstKeptEntryId` on.
 */
export interface CompactionEntry extends SessionEntryBase {
  type: "compaction";
  /** The structured summary of what was cut, as text the model reads. */
  summary: string;
  /** The first entry of the path that is kept verbatim after the summary. */
  firstKeptEntryId: string;
  /** Estimated tokens of the context before compaction. */
  tokensBefore: number;
  /** Estimated tokens of the context after compaction (summary + kept entries). */
  tokensAfter: number;
}

/**
 * The model and thinking level chosen from here on (the CLI's `/model`, `/thinking`). Not part
 * of the model's context: it is a setting, and `--continue` restores the newest one on the path.
 */
export interface ModelChangeEntry extends SessionEntryBase {
  type: "model_change";
  /** The model as the user named it: a catalogue id, a virtual model, or `a,b` (fallback). */
  model: string;
  thinking: ThinkingLevel;
}

/**
 * The real model that answers from here on, under a virtual (routing or fallback) model: written just
 * before the answer it gave, and only when it differs from the one recorded last (the first
 * answer of a virtual model is a change). Not part of the model's context.
 */
export interface ModelRouteEntry extends SessionEntryBase {
  type: "model_route";
  /** The model as the user chose it (the virtual model's name, or `a,b`). */
  model: string;
  /** The real model that answered: its provider and id, as its answer records them. */
  provider: string;
  answeredBy: string;
  /** The models that failed before their first byte for that answer, in order, with why. */
  skipped: { model: string; error: string }[];
}

/**
 * A durable run's intent before effect: a tool call about to run, committed before its tool's
 * `execute` is called. `parentId` is the entry that was last when it was written (so its path
 * holds the call's assistant message); it is never on the conversation's main path, and the
 * transcript skips it. A call with an intent and no result was interrupted while it ran.
 */
export interface ToolIntentEntry extends SessionEntryBase {
  type: "tool_intent";
  toolCallId: string;
  toolName: string;
  /** The validated arguments the tool was given. */
  arguments: unknown;
}

/**
 * A durable run's record of what a tool's `execute` returned (or threw, as `isError`), committed right after
 * it, before the result message: a crash in between loses nothing and repeats nothing.
 */
export interface ToolOutcomeEntry extends SessionEntryBase {
  type: "tool_outcome";
  toolCallId: string;
  toolName: string;
  content: AgentToolResult<unknown>["content"];
  isError: boolean;
}

/** One line of a session file after the header. */
export type SessionEntry =
  | MessageEntry
  | LabelEntry
  | CompactionEntry
  | ModelChangeEntry
  | ModelRouteEntry
  | ToolIntentEntry
  | ToolOutcomeEntry;
