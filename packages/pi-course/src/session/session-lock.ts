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
 * A lock whose owner is gone (killed, crashed: a lock file is never cleaned up then) is stale: on
 * this host, a pid that no longer runs, or runs with another start time, or is a zombie. A stale
 * lock is taken over (removed, then created again with `O_EXCL`, so of two processes breaking it
 * at once one wins). A lock of another host is never taken over: the message says so.
 *
 * Limits: a lock file on a network file system without `O_EXCL` semantics guards nothing.
 */
import { constants, readFileSync } from "node:fs";
import { open, readFile, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { PiCourseError } from "../errors.js";

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
    try {
      const handle = await open(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      try {
        await handle.writeFile(text);
      } finally {
        await handle.close();
      }
      return async () => {
        // Remove it only if it is still ours (never another writer's).
        const now = await readFile(lock, "utf8").catch(() => undefined);
        if (now === text) await unlink(lock).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const seen = await readFile(lock, "utf8").catch(() => undefined);
    if (seen === undefined && attempt < 3) continue; // released meanwhile
    const holder = seen === undefined ? undefined : parseOwner(seen);
    if (attempt < 3 && seen !== undefined && isStale(holder, owner.host)) {
      // Remove exactly the stale file we read: if it changed meanwhile, another process took it over.
      const again = await readFile(lock, "utf8").catch(() => undefined);
      if (again === seen) await unlink(lock).catch(() => undefined);
      continue;
    }
    throw new SessionLockedError(path, holder);
  }
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
