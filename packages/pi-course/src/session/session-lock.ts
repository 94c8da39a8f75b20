/**
 * One writer per session file: a lock file beside it (`<file>.lock`) while it is open for writing.
 *
 * Two writers on one file would each append children of their own leaf, and a resume follows the
 * last line, so one conversation would end up on a branch nothing resumes. So a writer first
 * creates `<file>.lock` with `O_EXCL` (atomic on a local file system) holding who it is:
 * `{"pid":…,"start":"…","host":"…"}` (`start`: the process's start time from `/proc`, so a
 * recycled pid is not taken for the owner). A second writer is refused with a
 * `SessionLockedError` that names the holder; readers (`readSessionFile`, `SessionFile.open` with
 * `readOnly`) take no lock.
 *
 * A lock file appears whole: it is written under a name of its own beside it, then hard-linked to
 * `<file>.lock` (a link fails if the name exists, atomically), so no taker ever reads it empty
 * and takes it for a torn, stale one.
 *
 * A lock whose owner is gone (killed, crashed: a lock file is never cleaned up then) is stale: on
 * this host, a pid that no longer runs, or runs with another start time, or is a zombie. A stale
 * lock is taken over one taker at a time: the taker first makes the breaker file
 * `<file>.lock.break` (whole, like a lock), reads the lock again under it, and removes it only if
 * it still holds the stale owner it judged; then it takes the lock like anyone else. Only a
 * lock's owner and the breaker's holder remove a lock file, so what the breaker read is what it
 * removes, and of any number of simultaneous takers exactly one holds the lock. A lock of another
 * host is never taken over: the message says so.
 *
 * Limits: a lock file on a network file system without atomic links (or `O_EXCL`) guards nothing.
 * A breaker left by a process killed while it held it (microseconds) is stale in turn and removed
 * by the next taker.
 */
import { randomBytes } from "node:crypto";
import { constants, readFileSync } from "node:fs";
import { link, open, readFile, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { PiCourseError } from "../base/errors.js";

/** Who holds a session lock, as its lock file says. */
export interface LockOwner {
  pid: number;
  /** The process's start time (field 22 of `/proc/<pid>/stat`), "" off Linux. */
  start: string;
  host: string;
}

/** A session file that another process has open for writing. */
export class SessionLockedError extends PiCourseError {
  override name = "SessionLockedError";
  /** Stable: `"SESSION_LOCKED"`. */
  override readonly code = "SESSION_LOCKED";
  constructor(
    /** The session file. */
    readonly path: string,
    /** Who holds it (undefined when the lock file cannot be read). */
    readonly owner: LockOwner | undefined,
  ) {
    super(
      `${path} is open for writing by ${owner === undefined ? "another process" : `process ${owner.pid} on ${owner.host}`} ` +
        `(lock file ${path}.lock): one writer per session. Close the session there first, or open it read-only ` +
        "(SessionFile.open(path, { readOnly: true })). If that process is gone from another machine, delete the lock file.",
    );
  }
}

/** The lock file of a session file. */
export function lockPathOf(path: string): string {
  return `${path}.lock`;
}

/** This process, as a lock file names it. */
function me(): LockOwner {
  return { pid: process.pid, start: startOf(process.pid) ?? "", host: hostname() };
}

/**
 * Takes the write lock of the session file at `path`, or throws `SessionLockedError`. Resolves
 * with the function that releases it (removes the lock file if it is still this process's).
 */
export async function acquireSessionLock(path: string): Promise<() => Promise<void>> {
  const lock = lockPathOf(path);
  const owner = me();
  const text = `${JSON.stringify(owner)}\n`;
  for (let attempt = 0; ; attempt++) {
    if (await createWhole(lock, text)) {
      return async () => {
        // Remove it only if it is still ours (never another writer's).
        const now = await readFile(lock, "utf8").catch(() => undefined);
        if (now === text) await unlink(lock).catch(() => undefined);
      };
    }
    const seen = await readFile(lock, "utf8").catch(() => undefined);
    const holder = seen === undefined ? undefined : parseOwner(seen);
    if (attempt < MAX_ATTEMPTS && (seen === undefined || isStale(holder, owner.host))) {
      // released meanwhile, or stale: try again (after breaking it, or while another taker does)
      if (seen !== undefined && !(await breakStale(lock, seen, text, owner.host))) await pause();
      continue;
    }
    throw new SessionLockedError(path, holder);
  }
}

/** How often a taker tries again while a lock is released or taken over around it. */
const MAX_ATTEMPTS = 50;

function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8));
}

/**
 * Creates `file` holding `text` in one step, or answers false if it exists: written under a name
 * of its own, then hard-linked to `file` (a file system without hard links gets `O_EXCL`, then the
 * text: a reader may then see it empty for a moment).
 */
async function createWhole(file: string, text: string): Promise<boolean> {
  const draft = `${file}.${process.pid}.${randomBytes(6).toString("hex")}`;
  try {
    await writeFile(draft, text, { flag: "wx", mode: 0o600 });
    await link(draft, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw error;
  } finally {
    await unlink(draft).catch(() => undefined);
  }
  try {
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(text);
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/**
 * Removes the stale lock that held `seen`, as the holder of its breaker (see the module comment);
 * false when another taker holds the breaker (a breaker whose holder is gone is removed).
 */
async function breakStale(lock: string, seen: string, text: string, host: string): Promise<boolean> {
  const breaker = `${lock}.break`;
  if (!(await createWhole(breaker, text))) {
    const other = await readFile(breaker, "utf8").catch(() => undefined);
    if (other !== undefined && isStale(parseOwner(other), host)) {
      const again = await readFile(breaker, "utf8").catch(() => undefined);
      if (again === other) await unlink(breaker).catch(() => undefined);
    }
    return false;
  }
  try {
    const again = await readFile(lock, "utf8").catch(() => undefined);
    if (again === seen) await unlink(lock).catch(() => undefined);
  } finally {
    await unlink(breaker).catch(() => undefined);
  }
  return true;
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (typeof value.pid !== "number" || typeof value.start !== "string" || typeof value.host !== "string") {
      return undefined;
    }
    return { pid: value.pid, start: value.start, host: value.host };
  } catch {
    return undefined;
  }
}

/**
 * Whether the lock's owner is gone. A lock file that cannot be read as one (cut by a crash while
 * it was written) is stale too; a lock of another host is not (its processes cannot be seen).
 */
function isStale(owner: LockOwner | undefined, host: string): boolean {
  if (owner === undefined) return true;
  if (owner.host !== host) return false;
  if (owner.pid === process.pid) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return true;
  }
  const start = startOf(owner.pid);
  if (start === undefined) return false;
  if (owner.start !== "" && start !== owner.start) return true;
  return stateOf(owner.pid) === "Z";
}

function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name in parentheses: state ppid … (starttime is field 22).
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** A process's start time (clock ticks since boot), undefined when unknown. */
function startOf(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

function stateOf(pid: number): string | undefined {
  return statFields(pid)?.[0];
}
