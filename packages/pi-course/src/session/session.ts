/**
 * A session: an append-only JSONL file holding a tree of entries.
 *
 * Line 1 is the header (`SessionHeader`); every later line is one entry with `id` and `parentId`.
 * The file makes each entry's id (8 hex characters, unique within the file, never changed); the
 * caller says which entry a new one continues (`parentId`), so branching is appending a child of
 * an older entry, and nothing is ever rewritten. `leaf` is the last entry in file order: the
 * default place to continue, nothing more.
 *
 * Writes are serialised: appends run one after another in call order, each as one `write` of a
 * whole line (`fsync` after it with `durable: true`). An entry is visible (`entries()`, `leaf`,
 * `pathToLeaf`) once its line is written, and `append` resolves with its id then. If a write
 * fails, the file is closed for writing: that append and every later one reject, and what was
 * visible stays exactly what the file holds; reopen the file to go on.
 *
 * Reading and recovery are in session-reader.ts: a torn tail (a crash mid-write) is reported in
 * `recovery.tail`; the first append after it writes a newline and a torn mark first, so the torn
 * bytes stay in the file on a line of their own that readers report (`recovery.kept`) and skip.
 *
 * One writer per file (session-lock.ts): `create` and `open` take the file's write lock
 * (`<file>.lock`, with the owner's pid) and `close` releases it; a second writer, in this process
 * or another, is refused with a `SessionLockedError` naming the holder. `open` with `readOnly`
 * takes no lock and appends nothing (for viewers). A new file is created 0600: transcripts hold
 * code, paths and sometimes secrets.
 */
import { errorText } from "../base/errors.js";
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { access, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { ENTRY_TYPES, MAX_NESTING, SESSION_FORMAT_VERSION, nestedDeeperThan } from "./session-entry.js";
import { acquireSessionLock } from "./session-lock.js";
import { readSessionFile, type SessionRecovery } from "./session-reader.js";
import type { AgentMessage } from "../types.js";
import type { SessionEntry, SessionHeader, SessionTornMark } from "./types.js";

/** Options of `SessionFile.create` and `SessionFile.open`. */
export interface SessionFileOptions {
  /** `fsync` after every write, so an appended entry survives a power cut, not only a crash. Default false. */
  durable?: boolean;
  /**
   * `open` only: read the file without taking its write lock (a viewer); `append` rejects. Default
   * false.
   */
  readOnly?: boolean;
}

/** What `SessionFile.create` needs; the rest of the header is made for you. */
export interface SessionHeaderInput {
  /** The working folder the session runs in. */
  cwd: string;
  /** Default: a random UUID. */
  id?: string;
  /** Default: now. */
  timestamp?: string;
}

type WithoutMade<T> = T extends unknown ? Omit<T, "id" | "timestamp"> : never;

/** An entry as given to `append`: everything but the `id` and `timestamp` the file makes. */
export type SessionEntryInput = WithoutMade<SessionEntry>;

const OPEN_FOR_APPEND = constants.O_WRONLY | constants.O_APPEND;

export class SessionFile {
  private readonly list: SessionEntry[] = [];
  private readonly byId = new Map<string, SessionEntry>();
  private readonly childrenOf = new Map<string | null, SessionEntry[]>();
  /** Ids handed out whose lines are not written yet. */
  private readonly pending = new Set<string>();
  /** The tail of the write queue. */
  private queue: Promise<void> = Promise.resolve();
  private broken: Error | undefined;
  private closed = false;

  private constructor(
    /** The file. */
    readonly path: string,
    /** The header line. */
    readonly header: SessionHeader,
    private readonly torn: SessionRecovery,
    entries: SessionEntry[],
    /** Undefined when opened read-only. */
    private readonly handle: FileHandle | undefined,
    private readonly durable: boolean,
    /** Releases the write lock (a no-op when read-only). */
    private readonly unlock: () => Promise<void>,
  ) {
    for (const entry of entries) this.index(entry);
  }

  /** Creates a new session file with its header. Refuses a path that exists. */
  static async create(path: string, input: SessionHeaderInput, options: SessionFileOptions = {}): Promise<SessionFile> {
    const created = await SessionFile.createExclusive(path, input, options);
    if (created === undefined) throw alreadyExists(path);
    return created;
  }

  /**
   * Opens the session file at `path` if there is one, else creates it with `input`'s header: the
   * one call for "resume this conversation, or start it". Creation is exclusive and both ways take
   * the write lock, so of two callers racing on one path, one gets the file and the other a
   * `SessionLockedError` (one writer per session). An existing file keeps its own header (`input`
   * is then not used). Close it when done.
   */
  static async openOrCreate(
    path: string,
    input: SessionHeaderInput,
    options: SessionFileOptions = {},
  ): Promise<SessionFile> {
    return (await SessionFile.createExclusive(path, input, options)) ?? SessionFile.open(path, options);
  }

  /** `create`, or undefined when the path exists (the lock is then released or not taken). */
  private static async createExclusive(
    path: string,
    input: SessionHeaderInput,
    options: SessionFileOptions,
  ): Promise<SessionFile | undefined> {
    const header: SessionHeader = {
      type: "session",
      version: SESSION_FORMAT_VERSION,
      id: input.id ?? randomUUID(),
      timestamp: input.timestamp ?? new Date().toISOString(),
      cwd: input.cwd,
    };
    let unlock: () => Promise<void>;
    try {
      unlock = await acquireSessionLock(path);
    } catch (error) {
      // A path that exists is "exists", whoever has it open.
      if (
        await access(path).then(
          () => true,
          () => false,
        )
      )
        return undefined;
      throw error;
    }
    let handle: FileHandle;
    try {
      handle = await open(path, OPEN_FOR_APPEND | constants.O_CREAT | constants.O_EXCL, 0o600);
    } catch (error) {
      await unlock();
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      return undefined;
    }
    try {
      await writeAll(handle, Buffer.from(JSON.stringify(header) + "\n"));
      if (options.durable) {
        await handle.sync();
        await syncFolder(dirname(path));
      }
    } catch (error) {
      await handle.close();
      await unlock();
      throw error;
    }
    return new SessionFile(path, header, { tail: null, kept: [] }, [], handle, options.durable ?? false, unlock);
  }

  /**
   * Opens an existing session file: reads and checks every line (see session-reader.ts), then
   * keeps the file open for appends. A torn tail is reported in `recovery.tail`, not an error.
   * Takes the write lock first (`SessionLockedError` if another writer holds it), unless
   * `readOnly`. On any failure, whatever it opened is closed and the lock released.
   */
  static async open(path: string, options: SessionFileOptions = {}): Promise<SessionFile> {
    const readOnly = options.readOnly ?? false;
    const unlock = readOnly ? async () => {} : await acquireSessionLock(path);
    let handle: FileHandle | undefined;
    try {
      // Read under the lock: no other writer can add lines (or a torn mark) meanwhile.
      const contents = await readSessionFile(path);
      if (!readOnly) handle = await open(path, OPEN_FOR_APPEND);
      return new SessionFile(
        path,
        contents.header,
        contents.recovery,
        contents.entries,
        handle,
        options.durable ?? false,
        unlock,
      );
    } catch (error) {
      await handle?.close();
      await unlock();
      throw error;
    }
  }

  /** What reading found besides the tree: a torn tail not yet marked, torn lines kept from earlier crashes. */
  get recovery(): SessionRecovery {
    return { tail: this.torn.tail, kept: this.torn.kept.slice() };
  }

  /** Every written entry, in file order (a new array; the entries are frozen). */
  entries(): SessionEntry[] {
    return this.list.slice();
  }

  /** The entry with this id, if it is written. */
  get(id: string): SessionEntry | undefined {
    return this.byId.get(id);
  }

  /** The last entry in file order (undefined while there is none): the default place to continue. */
  get leaf(): SessionEntry | undefined {
    return this.list[this.list.length - 1];
  }

  /** The entries from the root down to `id`, inclusive. Throws for an unknown id. */
  pathToLeaf(id: string): SessionEntry[] {
    // #region lab 10.3 SessionFile.pathToLeaf
    const path: SessionEntry[] = [];
    for (let at: string | null = id; at !== null; ) {
      const entry = this.byId.get(at);
      if (entry === undefined)
        throw new Error(`${this.path}: no entry "${at}" in this session (use an id from entries() or append())`);
      path.push(entry);
      at = entry.parentId;
    }
    return path.reverse();
    // #endregion
  }

  /** The entries whose parent is `id` (`null`: the roots), in file order. */
  children(id: string | null): SessionEntry[] {
    // #region lab 10.3 SessionFile.children
    if (id !== null && !this.byId.has(id)) throw new Error(`${this.path}: no entry "${id}" in this session`);
    return (this.childrenOf.get(id) ?? []).slice();
    // #endregion
  }

  /**
   * Appends an entry as a child of `entry.parentId` (an entry already written, or null for a
   * root) and resolves with the id the file gave it once its line is written.
   */
  append(entry: SessionEntryInput): Promise<string> {
    // #region lab 10.1 SessionFile.append
    if (this.closed) return Promise.reject(new Error(`${this.path}: the session is closed; open it again to append`));
    if (this.handle === undefined) {
      return Promise.reject(
        new Error(`${this.path}: the session was opened read-only; open it without readOnly to append`),
      );
    }
    if (this.broken) return Promise.reject(this.brokenError());
    const { type, parentId, ...rest } = entry;
    if (!(ENTRY_TYPES as readonly string[]).includes(type)) {
      return Promise.reject(new Error(`${this.path}: unknown entry type "${type}" (known: ${ENTRY_TYPES.join(", ")})`));
    }
    if (parentId !== null && !this.byId.has(parentId)) {
      return Promise.reject(
        new Error(
          `${this.path}: parentId "${parentId}" is not a written entry of this session (await the append that made it)`,
        ),
      );
    }
    if (entry.type === "label" && !this.byId.has(entry.targetId)) {
      return Promise.reject(
        new Error(`${this.path}: label target "${entry.targetId}" is not a written entry of this session`),
      );
    }
    const id = this.newId();
    const timestamp = new Date().toISOString();
    const record: Record<string, unknown> = { type, id, parentId, timestamp, ...rest };
    // The file makes these two, whatever the caller passed.
    record.id = id;
    record.timestamp = timestamp;
    // The reader refuses deeper lines (session-entry.ts), so they are never written.
    if (nestedDeeperThan(record, MAX_NESTING)) {
      return Promise.reject(new Error(`${this.path}: the entry is nested deeper than ${MAX_NESTING} levels`));
    }
    let line: string;
    try {
      line = JSON.stringify(record) + "\n";
    } catch (error) {
      return Promise.reject(new Error(`${this.path}: the entry is not JSON-serialisable (${errorText(error)})`));
    }
    this.pending.add(id);
    const written = this.queue.then(() => this.write(line));
    this.queue = written.catch(() => undefined);
    return written.then(
      () => id,
      (error: unknown) => {
        this.pending.delete(id);
        throw error;
      },
    );
    // #endregion
  }

  /** Waits for the queued writes, then closes the file and releases its write lock. Later appends reject. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    try {
      await this.handle?.close();
    } finally {
      await this.unlock();
    }
  }

  /** One queued write: the torn mark first if a torn tail is pending, then the line. */
  private async write(line: string): Promise<void> {
    // #region lab 10.1 SessionFile.write
    if (this.broken) throw this.brokenError();
    const handle = this.handle!;
    try {
      const tail = this.torn.tail;
      if (tail !== null) {
        const mark: SessionTornMark = {
          type: "torn",
          offset: tail.offset,
          length: tail.length,
          timestamp: new Date().toISOString(),
        };
        await writeAll(handle, Buffer.from("\n" + JSON.stringify(mark) + "\n"));
        if (this.durable) await handle.sync();
        this.torn.kept.push(tail);
        this.torn.tail = null;
      }
      await writeAll(handle, Buffer.from(line));
      if (this.durable) await handle.sync();
    } catch (error) {
      this.broken = error as Error;
      throw this.brokenError();
    }
    // What memory holds is what the file holds: the written line, parsed back.
    const entry = JSON.parse(line) as SessionEntry;
    this.pending.delete(entry.id);
    this.index(entry);
    // #endregion
  }

  private index(entry: SessionEntry): void {
    deepFreeze(entry);
    this.list.push(entry);
    this.byId.set(entry.id, entry);
    const siblings = this.childrenOf.get(entry.parentId);
    if (siblings === undefined) this.childrenOf.set(entry.parentId, [entry]);
    else siblings.push(entry);
  }

  /** 8 hex characters, unused in this file; a full UUID if 100 tries collide. */
  private newId(): string {
    // #region lab 10.1 SessionFile.newId
    for (let attempt = 0; attempt < 100; attempt++) {
      const id = randomUUID().slice(0, 8);
      if (!this.byId.has(id) && !this.pending.has(id)) return id;
    }
    return randomUUID();
    // #endregion
  }

  private brokenError(): Error {
    return new Error(
      `${this.path}: a write failed (${this.broken?.message}), so this session takes no more appends; ` +
        "what it shows is what the file holds: open the file again to go on",
    );
  }
}

/**
 * The messages of a path of entries (`pathToLeaf`), in order, as they were written. Other entry
 * types are skipped (labels are not context; `transcriptOf` reads compactions).
 */
export function messagesOf(path: readonly SessionEntry[]): AgentMessage[] {
  // #region lab 10.3 messagesOf
  const messages: AgentMessage[] = [];
  for (const entry of path) if (entry.type === "message") messages.push(entry.message);
  return messages;
  // #endregion
}

function alreadyExists(path: string): Error {
  return new Error(`${path} already exists: open it with SessionFile.open, or create the session at another path`);
}

/** One `write` of the whole buffer; a short write (rare on a regular file) goes on from where it stopped. */
async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, null);
    done += bytesWritten;
  }
}

/** Makes a new file's name durable too (its folder's entry), where the platform allows. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, "r");
  try {
    await handle.sync();
  } catch {
    // Some platforms cannot fsync a folder; the file's own fsync still ran.
  } finally {
    await handle.close();
  }
}

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
}
