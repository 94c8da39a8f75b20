/**
 * Chapter 19: what a durable run needs of where it keeps its progress.
 *
 * **Commit first, then visible**: a step of a run (a finished message, a tool call about to run,
 * what a tool returned, the part of an answer that has streamed) is written to the store before
 * anything acts on it or shows it. So a run killed at any point leaves a store from which the
 * next process can tell, for every step, whether it happened.
 *
 * Two stores, both append-or-replace, both asynchronous (they resolve once the write is done):
 *
 * - `DurableStore`: the session tree itself (a `SessionFile` is one). Entries are appended,
 *   never changed; `append` resolves once the line is written.
 * - `StreamJournal`: the answer being streamed, replaced whole at each delta (`save`), cleared
 *   once the answer is a message of the session (`clear`). `fileStreamJournal` keeps it in a file
 *   beside the session (`<session>.stream`, replaced by rename: a crash leaves the old or the new
 *   copy, never half of one).
 *
 * The interfaces are what a durable execution engine (Temporal and the like) would implement
 * when runs outgrow one machine: see ARCHITECTURE.md, "When runs outgrow one machine".
 */
import { randomUUID } from "node:crypto";
import { readFile, rename, unlink, writeFile } from "node:fs/promises";
import type { SessionEntryInput } from "../session/session.js";
import type { SessionEntry } from "../session/types.js";
import type { AssistantMessage } from "../types.js";

/** The session tree as a durable run uses it (a `SessionFile` is one). */
export interface DurableStore {
  /** The last entry written (undefined while there is none). */
  readonly leaf: SessionEntry | undefined;
  /** Every written entry, in the order written. */
  entries(): SessionEntry[];
  /** The entries from the root down to `id`. */
  pathToLeaf(id: string): SessionEntry[];
  /** Appends an entry; resolves with its id once it is written (committed). */
  append(entry: SessionEntryInput): Promise<string>;
}

/** The answer being streamed, with the entry it continues. */
export interface StreamedTurn {
  /** The entry the answer continues (the session's leaf when it started); null for none. */
  parentId: string | null;
  /** The assistant message as far as it had arrived. */
  message: AssistantMessage;
}

/** Where the answer being streamed is kept while it streams. */
export interface StreamJournal {
  /** Replaces what is kept; resolves once it is written. */
  save(turn: StreamedTurn): Promise<void>;
  /** What is kept, or undefined. A copy that cannot be read is treated as none. */
  load(): Promise<StreamedTurn | undefined>;
  /** Forgets what is kept (the answer is in the session now, or was recovered). */
  clear(): Promise<void>;
}

/** The stream journal file of a session file. */
export function streamPathOf(sessionPath: string): string {
  return `${sessionPath}.stream`;
}

/**
 * A `StreamJournal` in the file `path`: each `save` writes a temporary file beside it and renames
 * it over `path` (atomic on a local file system), so a crash leaves a whole copy or none.
 */
export function fileStreamJournal(path: string): StreamJournal {
  return {
    async save(turn) {
      const temporary = `${path}.${randomUUID().slice(0, 8)}.tmp`;
      await writeFile(temporary, JSON.stringify(turn), { mode: 0o600 });
      await rename(temporary, path);
    },
    async load() {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch {
        return undefined;
      }
      try {
        const turn = JSON.parse(text) as StreamedTurn;
        if (typeof turn !== "object" || turn === null || turn.message?.role !== "assistant") return undefined;
        return turn;
      } catch {
        return undefined;
      }
    },
    async clear() {
      await unlink(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
    },
  };
}
