/**
 * The engine's folder stays its owner's alone: refused at start when someone else could read or
 * replace what is in it, and looked at again on every use after, so a folder swapped for another
 * (or a link to another user's) while the engine runs is noticed and nothing more is written or
 * started there.
 *
 * At start (`guardFolder`), the folder must not be a symbolic link, must be its owner's, must not
 * be writable by others; and every folder above it (its real path) must belong to root or the
 * owner and be writable by no one else, unless it is sticky like /tmp (where only a folder's owner
 * may rename it). Otherwise another user could rename the folder away and put a link to their own
 * in its place, and the engine would write its credential there, or start its Restate server on
 * their data, the next time it uses the path.
 *
 * Later (`check`): the path must still name the very folder of the start (device and inode, by
 * `lstat`, so a link in its place is refused), and the folders above must still pass. A check and
 * the use after it are two steps, so this narrows the window to the moment between them; the
 * engine checks before each write and restart, and once a second.
 *
 * A worker's TMPDIR named with `--tmpdir` is held to the same rules at the worker's start
 * (`WORKER_TMPDIR`): the worker makes every case's workspace in it, and its tools write there.
 */
import { lstat, realpath } from "node:fs/promises";
import path from "node:path";

/** What a guarded folder is, for the errors: the engine's folder, or a worker's TMPDIR. */
export interface FolderRole {
  /** e.g. "the engine's folder". */
  name: string;
  /** The option that names it, e.g. "--dir". */
  option: string;
  /** What its owner could read or replace, e.g. "its credential and keys". */
  holds: string;
  /** What a file planted in it would do, e.g. "a credential or key planted in it would be taken as the engine's". */
  planted: string;
}

/** The engine's folder (`engine --dir`). */
export const ENGINE_FOLDER: FolderRole = {
  name: "the engine's folder",
  option: "--dir",
  holds: "its credential and keys",
  planted: "a credential or key planted in it would be taken as the engine's",
};

/**
 * A worker's TMPDIR (`worker --tmpdir`): every eval case's workspace and every tool's temporary
 * files are made in it, so whoever else may write it could swap a case's folder for their own, or
 * plant links where the worker's tools write (as the worker's user).
 */
export const WORKER_TMPDIR: FolderRole = {
  name: "the worker's TMPDIR",
  option: "--tmpdir",
  holds: "the workspace of every case and the temporary files of every tool the worker runs",
  planted: "a link planted in it would send the worker's writes elsewhere",
};

export interface FolderGuard {
  /** The folder, resolved. */
  dir: string;
  /** Throws, saying what changed, unless the folder is still the one of the start and still safe. */
  check(): Promise<void>;
}

/**
 * Checks `dir` (which must exist) and the folders above it; resolves with the guard to check it
 * again. `role` names it in the errors (default: the engine's folder).
 */
export async function guardFolder(dir: string, role: FolderRole = ENGINE_FOLDER): Promise<FolderGuard> {
  const resolved = path.resolve(dir);
  const first = await ownFolder(resolved, role);
  const real = await realpath(resolved);
  await safeAncestors(resolved, real, role);
  return {
    dir: resolved,
    async check() {
      const now = await lstat(resolved).catch(() => undefined);
      if (now === undefined || now.isSymbolicLink() || now.dev !== first.dev || now.ino !== first.ino) {
        throw new Error(
          `${role.name} ${resolved} was swapped while it ran (${now === undefined ? "it is gone" : now.isSymbolicLink() ? "it is a symbolic link now" : "it is another folder now"}): ` +
            "the engine stopped and wrote nothing more there. Find who could write the folder above it, " +
            "then start the engine again on its real folder.",
        );
      }
      await ownFolder(resolved, role);
      await safeAncestors(resolved, await realpath(resolved), role);
    },
  };
}

/**
 * Refuses a folder the engine would not be alone in: a symbolic link, a folder another user
 * made (in /tmp, before the engine did), or one others may write in (they may have planted
 * files). Its owner could read or swap the credential and the keys (the engine takes the token of
 * a `client.json` it finds there), whatever modes the engine sets.
 */
async function ownFolder(dir: string, role: FolderRole): Promise<{ dev: number; ino: number }> {
  const info = await lstat(dir);
  if (info.isSymbolicLink()) {
    throw new Error(
      `${role.name} ${dir} is a symbolic link; give ${role.option} the real folder (it is made 0700 when missing).`,
    );
  }
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new Error(
      `${role.name} ${dir} belongs to another user (uid ${info.uid}); whoever owns it can read or replace ${role.holds}. ` +
        `Give ${role.option} a folder of your own (it is made 0700 when missing).`,
    );
  }
  if ((info.mode & 0o022) !== 0) {
    throw new Error(
      `${role.name} ${dir} can be written by other users (mode ${(info.mode & 0o777).toString(8)}); ` +
        `${role.planted}. Give ${role.option} a new folder (it is made 0700).`,
    );
  }
  return { dev: info.dev, ino: info.ino };
}

/** Refuses when a folder above `real` (the real path of `dir`) lets another user rename `dir` away. */
async function safeAncestors(dir: string, real: string, role: FolderRole): Promise<void> {
  const uid = process.getuid?.();
  if (uid === undefined) return; // no users to tell apart (Windows)
  for (let above = path.dirname(real); ; above = path.dirname(above)) {
    const info = await lstat(above);
    const mode = (info.mode & 0o7777).toString(8);
    if (info.uid !== 0 && info.uid !== uid) {
      throw new Error(
        `the folder ${above} above ${role.name} ${dir} belongs to another user (uid ${info.uid}), who could swap ${role.name} for their own. ` +
          `Give ${role.option} a folder under folders of your own or root's.`,
      );
    }
    if ((info.mode & 0o022) !== 0 && (info.mode & 0o1000) === 0) {
      throw new Error(
        `the folder ${above} above ${role.name} ${dir} can be written by other users (mode ${mode}), who could swap ${role.name} for their own. ` +
          `Make it writable by its owner only (chmod go-w ${above}), or sticky like /tmp (chmod +t ${above}), or give ${role.option} a folder elsewhere.`,
      );
    }
    if (above === path.dirname(above)) return;
  }
}
