/**
 * Reading a session file back: complete lines only, a torn tail set aside, the tree checked.
 *
 * The rules (the format is JSONL: one JSON value per line, `\n` after each):
 * - Only newline-terminated lines count. Bytes after the last `\n` are a torn tail (a crash in
 *   the middle of a write): reported with their byte offset and length, never parsed, never
 *   dropped. The next append writes `\n` and a torn mark naming them (session.ts), so from then
 *   on they sit on a line of their own that every reader reports as kept and skips.
 * - Line 1 is the header; a newer format version is refused.
 * - Any other line that is not a valid entry is an error naming its line: a corrupt line, an
 *   unknown type, a duplicate id, a `parentId` that names no entry (dangling) or a later one
 *   (a cycle, or a reordered file), a label of an unknown entry.
 *
 * Cost: one pass over the bytes in 1 MiB reads; time and memory linear in the file.
 */
import { errorText } from "../base/errors.js";
import { open } from "node:fs/promises";
import { constants } from "node:fs";
import {
  MAX_NESTING,
  SessionFileError,
  nestedDeeperThan,
  parseEntry,
  parseHeader,
  parseTornMark,
} from "./session-entry.js";
import type { SessionEntry, SessionHeader } from "./types.js";

/** Bytes of a session file that are not part of the tree: a torn line. */
export interface TornLine {
  /** The 1-based line the bytes are on. */
  line: number;
  /** Byte offset of the first byte in the file. */
  offset: number;
  /** Number of bytes (the newline after them not included). */
  length: number;
}

/** What reading found besides the tree. */
export interface SessionRecovery {
  /** Bytes after the last newline (a crash mid-write), or null. The next append marks them kept. */
  tail: TornLine | null;
  /** Torn lines of earlier crashes, marked by a later append: kept in the file, skipped. */
  kept: TornLine[];
}

/** A session file as read. */
export interface SessionContents {
  header: SessionHeader;
  /** Every entry, in file order; each entry's parent comes before it. */
  entries: SessionEntry[];
  recovery: SessionRecovery;
  /** Complete lines (header, entries, torn lines and their marks). */
  lines: number;
}

const READ_SIZE = 1 << 20;
const NEWLINE = 0x0a;

/** Reads and checks the session file at `path`. Throws `SessionFileError` naming the line. */
export async function readSessionFile(path: string): Promise<SessionContents> {
  // Non-blocking: opening a FIFO named like a session file must not wait for a writer.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) {
      throw new SessionFileError(path, 0, "not a regular file (a FIFO, a device or a folder?): it is not a session");
    }
    const scan = new LineScan(path);
    const buffer = Buffer.allocUnsafe(READ_SIZE);
    for (let position = 0; ; ) {
      const { bytesRead } = await handle.read(buffer, 0, READ_SIZE, position);
      if (bytesRead === 0) break;
      scan.push(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    return scan.end();
  } finally {
    await handle.close();
  }
}

/** A complete line waiting for the next one (which may be a torn mark naming it). */
interface HeldLine {
  value: unknown;
  line: number;
  offset: number;
  length: number;
}

/**
 * Complete lines that are not JSON, from the first of them to the line before now: torn bytes
 * waiting for the mark that names them all (see `line`).
 */
interface TornRun {
  line: number;
  offset: number;
  /** Lines in the run. */
  lines: number;
  /** Every line after the first is empty or part of a torn mark (what a cut mark write leaves). */
  clean: boolean;
}

/** The start of every torn mark line. */
const MARK_START = '{"type":"torn"';

/** Whether `text` could be part of a torn mark cut short (empty, or a prefix of one, or one's start). */
function partOfMark(text: string): boolean {
  return text.startsWith(MARK_START) || MARK_START.startsWith(text);
}

/** The line-by-line state of one read. Feed it the bytes in order, then `end()`. */
export class LineScan {
  private header: SessionHeader | undefined;
  private readonly entries: SessionEntry[] = [];
  /** id → index in `entries`. */
  private readonly index = new Map<string, number>();
  /** The line of each entry, parallel to `entries`. */
  private readonly lineOf: number[] = [];
  private readonly kept: TornLine[] = [];
  /** `offset:length` of every kept torn line, for a mark written twice. */
  private readonly keptRanges = new Set<string>();
  /** The first entry (by index) whose parent was not an earlier entry. */
  private forward = -1;
  private held: HeldLine | null = null;
  private run: TornRun | null = null;
  /** The last kept torn line, while only marks have followed it (a later mark may widen it). */
  private lastKept: TornLine | null = null;
  /** Bytes of the line being read, when it started in an earlier chunk. */
  private partial: Buffer[] = [];
  private lineStart = 0;
  private position = 0;
  private lines = 0;

  constructor(private readonly path: string) {}

  /** Reads the next bytes of the file. */
  push(chunk: Buffer): void {
    // #region lab 10.2 LineScan.push
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end >= 0; end = chunk.indexOf(NEWLINE, start)) {
      let text: string;
      if (this.partial.length > 0) {
        this.partial.push(chunk.subarray(start, end));
        text = Buffer.concat(this.partial).toString("utf8");
        this.partial = [];
      } else {
        text = chunk.toString("utf8", start, end);
      }
      const length = this.position + end - this.lineStart;
      this.line(text, this.lineStart, length);
      start = end + 1;
      this.lineStart = this.position + start;
    }
    // The reader reuses its buffer: keep a copy of the unfinished line.
    if (start < chunk.length) this.partial.push(Buffer.from(chunk.subarray(start)));
    this.position += chunk.length;
    // #endregion
  }

  /**
   * The end of the file: the torn tail, the last held line, the references. Complete lines that
   * are not JSON at the very end, followed by nothing but parts of a torn mark, are what a cut
   * inside a torn-mark write leaves: they and the rest of the file become the torn tail, marked
   * whole by the next append.
   */
  end(): SessionContents {
    // #region lab 10.2 LineScan.end
    let tail =
      this.position > this.lineStart
        ? { line: this.lines + 1, offset: this.lineStart, length: this.position - this.lineStart }
        : null;
    if (this.header === undefined) {
      throw new SessionFileError(
        this.path,
        0,
        tail === null
          ? "the file is empty, so it is not a session file (SessionFile.create writes a header line first)"
          : "the header line is incomplete (the file was cut while it was being created); it holds no entries: delete it and create the session again",
      );
    }
    if (this.run !== null) {
      const rest = Buffer.concat(this.partial).toString("utf8");
      if (!this.run.clean || (tail !== null && !partOfMark(rest))) throw this.notJson(this.run);
      tail = { line: this.run.line, offset: this.run.offset, length: this.position - this.run.offset };
      this.run = null;
    }
    if (this.held !== null) this.entry(this.held);
    this.held = null;
    if (this.forward >= 0) throw this.forwardError(this.forward);
    return { header: this.header, entries: this.entries, recovery: { tail, kept: this.kept }, lines: this.lines };
    // #endregion
  }

  /**
   * One complete line. An entry line is held until the next line shows whether it is torn; a line
   * that is not JSON starts a run of torn lines that only a torn mark naming the whole run ends.
   */
  private line(text: string, offset: number, length: number): void {
    // #region lab 10.2 LineScan.line
    const line = ++this.lines;
    if (line === 1) {
      this.header = parseHeader(this.json(text, line, offset), this.path);
      return;
    }
    const value = parseOrUndefined(text);
    if (value !== undefined && text.startsWith(MARK_START)) return this.mark(value, line, offset);
    if (this.run !== null) {
      // Only a mark ends a run; until then every line is part of it.
      this.run.lines += 1;
      if (text !== "" && !partOfMark(text)) this.run.clean = false;
      return;
    }
    this.lastKept = null;
    if (this.held !== null) this.entry(this.held);
    this.held = null;
    if (value === undefined) this.run = { line, offset, lines: 1, clean: true };
    else this.held = { value, line, offset, length };
    // #endregion
  }

  /**
   * A torn mark on line `line` at byte `offset`. It must name exactly the bytes before it (less
   * the newline the mark write began with): the held line or the run of torn lines; or the kept
   * torn line before it and the marks after that (a mark whose write was cut, marked again); or,
   * after one empty line, a torn line already kept (two openers each marked the same torn tail).
   */
  private mark(value: unknown, line: number, offset: number): void {
    const mark = parseTornMark(value, this.path, line);
    const ends = mark.offset + mark.length === offset - 1;
    const run = this.run;
    const held = this.held;
    if (run !== null && ends && mark.offset === run.offset) {
      this.keep({ line: run.line, offset: run.offset, length: mark.length });
    } else if (run === null && held !== null && ends && mark.offset === held.offset) {
      this.keep({ line: held.line, offset: held.offset, length: held.length });
    } else if (
      run === null &&
      held === null &&
      this.lastKept !== null &&
      ends &&
      mark.offset === this.lastKept.offset
    ) {
      this.keptRanges.delete(`${this.lastKept.offset}:${this.lastKept.length}`);
      this.lastKept.length = mark.length;
      this.keptRanges.add(`${mark.offset}:${mark.length}`);
      return;
    } else if (
      run !== null &&
      run.lines === 1 &&
      run.offset === offset - 1 &&
      this.keptRanges.has(`${mark.offset}:${mark.length}`)
    ) {
      this.run = null;
      return;
    } else {
      throw new SessionFileError(
        this.path,
        line,
        `this torn mark names ${mark.length} bytes at offset ${mark.offset}, but ` +
          (run !== null
            ? `line ${run.line} is ${run.lines === 1 ? offset - 1 - run.offset : "torn: its lines span"} bytes at offset ${run.offset}`
            : held === null
              ? "the line before it is not an entry line"
              : `line ${held.line} is ${held.length} bytes at offset ${held.offset}`) +
          ": the file was edited by hand; restore it from a copy",
      );
    }
    this.run = null;
    this.held = null;
  }

  private keep(torn: TornLine): void {
    this.kept.push(torn);
    this.keptRanges.add(`${torn.offset}:${torn.length}`);
    this.lastKept = torn;
  }

  /** The error for a run of lines that are not JSON and that no torn mark names. */
  private notJson(run: TornRun): SessionFileError {
    return new SessionFileError(
      this.path,
      run.line,
      `not valid JSON (byte offset ${run.offset}). Only the last line can be cut by a crash, ` +
        "so this line was damaged: restore the file from a copy (nothing was changed)",
    );
  }

  /** An entry line (not torn): parsed, checked against the entries before it, indexed. */
  private entry({ value, line }: HeldLine): void {
    if (nestedDeeperThan(value, MAX_NESTING)) {
      throw new SessionFileError(
        this.path,
        line,
        `the entry is nested deeper than ${MAX_NESTING} levels, which no session writes: the file was made by hand or damaged`,
      );
    }
    const entry = parseEntry(value, this.path, line);
    const first = this.index.get(entry.id);
    if (first !== undefined) {
      throw new SessionFileError(
        this.path,
        line,
        `duplicate entry id "${entry.id}" (first used on line ${this.lineOf[first]})`,
      );
    }
    if (entry.type === "label" && !this.index.has(entry.targetId)) {
      throw new SessionFileError(
        this.path,
        line,
        `label entry ${entry.id} names "${entry.targetId}", which is not an earlier entry`,
      );
    }
    if (entry.parentId !== null && !this.index.has(entry.parentId) && this.forward < 0)
      this.forward = this.entries.length;
    this.index.set(entry.id, this.entries.length);
    this.entries.push(entry);
    this.lineOf.push(line);
  }

  /** Why an entry's parent is not an earlier entry: dangling, a cycle, or a reordered file. */
  private forwardError(at: number): SessionFileError {
    const entry = this.entries[at]!;
    const line = this.lineOf[at]!;
    const parent = entry.parentId!;
    if (!this.index.has(parent)) {
      return new SessionFileError(
        this.path,
        line,
        `entry ${entry.id} has parentId "${parent}", which names no entry in the file (dangling): lines are missing; restore the file from a copy`,
      );
    }
    const lines = [line];
    const seen = new Set([entry.id]);
    for (let id: string | null = parent; id !== null; ) {
      const i = this.index.get(id);
      if (i === undefined) break;
      if (seen.has(id)) {
        return new SessionFileError(
          this.path,
          line,
          `entry ${entry.id} is its own ancestor: a cycle through lines ${lines.join(" → ")}`,
        );
      }
      seen.add(id);
      lines.push(this.lineOf[i]!);
      id = this.entries[i]!.parentId;
    }
    return new SessionFileError(
      this.path,
      line,
      `entry ${entry.id} comes before its parent "${parent}" (line ${this.lineOf[this.index.get(parent)!]}): ` +
        "an append-only file has every parent first, so the lines were reordered; restore the file from a copy",
    );
  }

  private json(text: string, line: number, offset: number): unknown {
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new SessionFileError(
        this.path,
        line,
        `not valid JSON (byte offset ${offset}: ${errorText(error)}). Only the last line can be cut by a crash, ` +
          "so this line was damaged: restore the file from a copy (nothing was changed)",
      );
    }
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
