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
 * - `StreamJournal`: the answer being streamed, saved at each delta (`save`), cleared once the
 *   answer is a message of the session (`clear`). `fileStreamJournal` keeps it in a file beside
 *   the session (`<session>.stream`), append-only: one line per delta (the first a whole copy,
 *   then what changed), so a delta costs one `write`, not a copy of the answer; a crash mid-write
 *   leaves a torn last line, which the reader skips.
 *
 * The interfaces are what a durable execution engine (Temporal and the like) would implement
 * when runs outgrow one machine: see ARCHITECTURE.md, "When runs outgrow one machine".
 */
import { type FileHandle, open, readFile, unlink } from "node:fs/promises";
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
  /** Keeps `turn` in place of what was kept; resolves once it is written. */
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
 * A `StreamJournal` in the file `path`, append-only: the first `save` of an answer (or one that
 * continues another entry) writes the file anew with a whole copy (`{"parentId", "message"}` on
 * one line); each later `save` appends one line with what changed since (`{"patch": [...]}`:
 * text appended to a text or thinking block, a block replaced or added, the message's other
 * fields replaced), in one `write`. `load` reads the lines in order and skips a torn last line (a
 * crash mid-write), so it gives the answer as of the last whole line. `clear` removes the file.
 *
 * A crash leaves the file as far as its last finished `write`: what `save` resolved for is kept.
 * Saves are written one after another, in the order called.
 */
export function fileStreamJournal(path: string): StreamJournal {
  let open_: OpenTurn | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  /** Runs `work` after every write called before it. */
  const inOrder = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work);
    queue = next.catch(() => {});
    return next;
  };
  const close = async () => {
    const turn = open_;
    open_ = undefined;
    await turn?.handle.close();
  };
  return {
    save: (turn) =>
      inOrder(async () => {
        try {
          if (open_ === undefined || open_.parentId !== turn.parentId) {
            await close();
            const handle = await open(path, "w", 0o600);
            open_ = { handle, parentId: turn.parentId, kept: keptForm(turn.message) };
            await writeLine(handle, JSON.stringify(turn));
            return;
          }
          const changed = patchOf(open_.kept, turn.message);
          if (changed === "whole") {
            open_.kept = keptForm(turn.message);
            await writeLine(open_.handle, JSON.stringify(turn));
          } else if (changed !== undefined) {
            await writeLine(open_.handle, JSON.stringify(changed));
          }
        } catch (error) {
          // the file may now hold less than `kept` says: the next save starts it anew
          await close().catch(() => {});
          throw error;
        }
      }),
    async load() {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch {
        return undefined;
      }
      return readStreamLines(text);
    },
    clear: () =>
      inOrder(async () => {
        await close();
        await unlink(path).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== "ENOENT") throw error;
        });
      }),
  };
}

/** The answer a `fileStreamJournal` file holds, or undefined; a torn last line is skipped. */
export function readStreamLines(text: string): StreamedTurn | undefined {
  const lines = text.split("\n");
  let turn: StreamedTurn | undefined;
  for (const [index, line] of lines.entries()) {
    // the last line has no newline: a write that did not finish (skipped unless it parses), or nothing
    const last = index === lines.length - 1;
    if (last && line === "") break;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (last) break; // torn: the answer as of the line before
      return undefined; // a whole line that does not parse: not a file this journal wrote
    }
    if (typeof value !== "object" || value === null) return undefined;
    if ("message" in value) {
      const whole = value as StreamedTurn;
      if (whole.message?.role !== "assistant" || !Array.isArray(whole.message.content)) return undefined;
      turn = whole;
    } else if ("patch" in value && turn !== undefined) {
      if (!applyPatch(turn.message, value as StreamPatch)) return undefined;
    } else {
      return undefined;
    }
  }
  return turn;
}

/** The answer being written by a `fileStreamJournal`: its file, and what the file holds so far. */
interface OpenTurn {
  handle: FileHandle;
  parentId: string | null;
  kept: KeptMessage;
}

/** What a journal file holds of an answer, in the form `patchOf` compares with. */
interface KeptMessage {
  /** The message without its content, as JSON. */
  head: string;
  /** Per block: its growing text (a text or thinking block), and the rest as JSON. */
  blocks: { grows: string | undefined; rest: string }[];
}

/** One appended line: `[index, "+", text]` appends to block `index`'s text, `[index, "=", block]` sets it. */
interface StreamPatch {
  patch: ([number, "+", string] | [number, "=", AssistantMessage["content"][number]])[];
  /** The message's fields other than its content, when they changed. */
  head?: Omit<AssistantMessage, "content">;
}

/** The field of a block that grows while it streams. */
function growingField(block: AssistantMessage["content"][number]): "text" | "thinking" | undefined {
  if (block.type === "text") return "text";
  if (block.type === "thinking") return "thinking";
  return undefined;
}

function keptBlock(block: AssistantMessage["content"][number]): KeptMessage["blocks"][number] {
  const field = growingField(block);
  if (field === undefined) return { grows: undefined, rest: JSON.stringify(block) };
  const { [field]: grows, ...rest } = block as unknown as Record<string, string>;
  return { grows, rest: JSON.stringify(rest) };
}

function headOf(message: AssistantMessage): string {
  const { content: _content, ...head } = message;
  return JSON.stringify(head);
}

function keptForm(message: AssistantMessage): KeptMessage {
  return { head: headOf(message), blocks: message.content.map(keptBlock) };
}

/**
 * What changed from `kept` to `message` as a patch (and `kept` updated to `message`), undefined
 * when nothing did, "whole" when a whole copy is simpler (blocks went away).
 */
function patchOf(kept: KeptMessage, message: AssistantMessage): StreamPatch | "whole" | undefined {
  if (message.content.length < kept.blocks.length) return "whole";
  const patch: StreamPatch["patch"] = [];
  message.content.forEach((block, index) => {
    const before = kept.blocks[index];
    const now = keptBlock(block);
    if (before !== undefined && before.rest === now.rest && before.grows === now.grows) return;
    if (
      before !== undefined &&
      before.rest === now.rest &&
      before.grows !== undefined &&
      now.grows?.startsWith(before.grows)
    ) {
      patch.push([index, "+", now.grows!.slice(before.grows.length)]);
    } else {
      patch.push([index, "=", block]);
    }
    kept.blocks[index] = now;
  });
  const head = headOf(message);
  const changed: StreamPatch = { patch };
  if (head !== kept.head) {
    kept.head = head;
    changed.head = JSON.parse(head);
  }
  return patch.length === 0 && changed.head === undefined ? undefined : changed;
}

/** Applies one line's patch to `message` in place; false when it does not fit (a file of another writer). */
function applyPatch(message: AssistantMessage, line: StreamPatch): boolean {
  if (!Array.isArray(line.patch)) return false;
  for (const [index, kind, value] of line.patch) {
    if (kind === "=") {
      if (typeof index !== "number" || index < 0 || index > message.content.length) return false;
      message.content[index] = value;
      continue;
    }
    const block = message.content[index];
    const field = block === undefined ? undefined : growingField(block);
    if (field === undefined || typeof value !== "string") return false;
    (block as unknown as Record<string, string>)[field] += value;
  }
  if (line.head !== undefined) {
    if (typeof line.head !== "object" || line.head === null) return false;
    const fields = message as unknown as Record<string, unknown>;
    for (const key of Object.keys(fields)) if (key !== "content" && !(key in line.head)) delete fields[key];
    Object.assign(message, line.head, { content: message.content });
  }
  return true;
}

/** Writes `line` and a newline at the end of the file, all of it. */
async function writeLine(handle: FileHandle, line: string): Promise<void> {
  const bytes = Buffer.from(`${line}\n`, "utf8");
  let at = 0;
  while (at < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, at, bytes.length - at);
    at += bytesWritten;
  }
}
