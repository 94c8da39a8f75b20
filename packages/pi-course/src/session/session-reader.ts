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
import { open } from "node:fs/promises";
import { SessionFileError, looksLikeTornMark, parseEntry, parseHeader, parseTornMark } from "./session-entry.js";
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
  const handle = await open(path, "r");
  try {
    if (!(await handle.stat()).isFile()) throw new SessionFileError(path, 0, "not a regular file");
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
  text: string;
  line: number;
  offset: number;
  length: number;
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
  /** The first entry (by index) whose parent was not an earlier entry. */
  private forward = -1;
  private held: HeldLine | null = null;
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

  /** The end of the file: the torn tail, the last held line, the references. */
  end(): SessionContents {
    // #region lab 10.2 LineScan.end
    const tail =
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
    if (this.held !== null) this.entry(this.held);
    this.held = null;
    if (this.forward >= 0) throw this.forwardError(this.forward);
    return { header: this.header, entries: this.entries, recovery: { tail, kept: this.kept }, lines: this.lines };
    // #endregion
  }

  /** One complete line. An entry line is held until the next line shows whether it is torn. */
  private line(text: string, offset: number, length: number): void {
    // #region lab 10.2 LineScan.line
    const line = ++this.lines;
    if (line === 1) {
      this.header = parseHeader(this.json(text, line, offset), this.path);
      return;
    }
    if (looksLikeTornMark(text)) {
      const mark = parseTornMark(this.json(text, line, offset), this.path, line);
      const held = this.held;
      if (held === null || held.offset !== mark.offset || held.length !== mark.length) {
        throw new SessionFileError(
          this.path,
          line,
          `this torn mark names ${mark.length} bytes at offset ${mark.offset}, but ` +
            (held === null
              ? "the line before it is not an entry line"
              : `line ${held.line} is ${held.length} bytes at offset ${held.offset}`) +
            ": the file was edited by hand; restore it from a copy",
        );
      }
      this.kept.push({ line: held.line, offset: held.offset, length: held.length });
      this.held = null;
      return;
    }
    if (this.held !== null) this.entry(this.held);
    this.held = { text, line, offset, length };
    // #endregion
  }

  /** An entry line (not torn): parsed, checked against the entries before it, indexed. */
  private entry({ text, line, offset }: HeldLine): void {
    const entry = parseEntry(this.json(text, line, offset), this.path, line);
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
        `not valid JSON (byte offset ${offset}: ${(error as Error).message}). Only the last line can be cut by a crash, ` +
          "so this line was damaged: restore the file from a copy (nothing was changed)",
      );
    }
  }
}
