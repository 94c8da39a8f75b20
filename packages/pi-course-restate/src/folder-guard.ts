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
 */
import { lstat, realpath } from "node:fs/promises";
import path from "node:path";

export interface FolderGuard {
  /** The folder, resolved. */
  dir: string;
  /** Throws, saying what changed, unless the folder is still the one of the start and still safe. */
  check(): Promise<void>;
}

/** Checks `dir` (which must exist) and the folders above it; resolves with the guard to check it again. */
export async function guardFolder(dir: string): Promise<FolderGuard> {
  const resolved = path.resolve(dir);
  const first = await ownFolder(resolved);
  const real = await realpath(resolved);
  await safeAncestors(resolved, real);
  return {
    dir: resolved,
    async check() {
      const now = await lstat(resolved).catch(() => undefined);
      if (now === undefined || now.isSymbolicLink() || now.dev !== first.dev || now.ino !== first.ino) {
        throw new Error(
          `the engine's folder ${resolved} was swapped while it ran (${now === undefined ? "it is gone" : now.isSymbolicLink() ? "it is a symbolic link now" : "it is another folder now"}): ` +
            "the engine stopped and wrote nothing more there. Find who could write the folder above it, " +
            "then start the engine again on its real folder.",
        );
      }
      await ownFolder(resolved);
      await safeAncestors(resolved, await realpath(resolved));
    },
  };
}

/**
 * Refuses a folder the engine would not be alone in: a symbolic link, a folder another user
 * made (in /tmp, before the engine did), or one others may write in (they may have planted
 * files). Its owner could read or swap the credential and the keys (the engine takes the token of
 * a `client.json` it finds there), whatever modes the engine sets.
 */
async function ownFolder(dir: string): Promise<{ dev: number; ino: number }> {
  const info = await lstat(dir);
  if (info.isSymbolicLink()) {
    throw new Error(
      `the engine's folder ${dir} is a symbolic link; give --dir the real folder (it is made 0700 when missing).`,
    );
  }
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new Error(
      `the engine's folder ${dir} belongs to another user (uid ${info.uid}); whoever owns it can read or replace its credential and keys. ` +
        "Give --dir a folder of your own (it is made 0700 when missing).",
    );
  }
  if ((info.mode & 0o022) !== 0) {
    throw new Error(
      `the engine's folder ${dir} can be written by other users (mode ${(info.mode & 0o777).toString(8)}); ` +
        "a credential or key planted in it would be taken as the engine's. Give --dir a new folder (it is made 0700).",
    );
  }
  return { dev: info.dev, ino: info.ino };
}

/** Refuses when a folder above `real` (the real path of `dir`) lets another user rename `dir` away. */
async function safeAncestors(dir: string, real: string): Promise<void> {
  const uid = process.getuid?.();
  if (uid === undefined) return; // no users to tell apart (Windows)
  for (let above = path.dirname(real); ; above = path.dirname(above)) {
    const info = await lstat(above);
    const mode = (info.mode & 0o7777).toString(8);
    if (info.uid !== 0 && info.uid !== uid) {
      throw new Error(
        `the folder ${above} above the engine's folder ${dir} belongs to another user (uid ${info.uid}), who could swap the engine's folder for their own. ` +
          "Give --dir a folder under folders of your own or root's.",
      );
    }
    if ((info.mode & 0o022) !== 0 && (info.mode & 0o1000) === 0) {
      throw new Error(
        `the folder ${above} above the engine's folder ${dir} can be written by other users (mode ${mode}), who could swap the engine's folder for their own. ` +
          `Make it writable by its owner only (chmod go-w ${above}), or sticky like /tmp (chmod +t ${above}), or give --dir a folder elsewhere.`,
      );
    }
    if (above === path.dirname(above)) return;
  }
}
