/**
 * `Workspace`: one root folder that every coding tool stays inside.
 *
 * A path is checked before use: lexically (after `..` and absolute paths are resolved it must lie
 * under the root) and on disk (its real path, with every symlink followed, must lie under the
 * root's real path; for a file that does not exist yet, the nearest existing ancestor is checked).
 * The check gives good messages, but it cannot be the guard on its own: between the check and
 * the use, another process can swap a folder on the path for a symlink to a folder outside. So
 * the use never goes through the path again: it walks from the root one folder at a time with
 * descriptors that follow no symlink (`HeldFolder`), and opens, creates and renames names inside
 * the last folder it holds. The opened descriptor's real path is checked once more after the open.
 * On Linux this closes the window; elsewhere it narrows it (see held-folder.ts).
 *
 * Hard links: a hard link inside the root to a file outside is the same file, and no path check
 * can tell. So `open` refuses a regular file with more than one link (`nlink > 1`): `read` and
 * `edit` never see such a file. `write` replaces the link by a rename and never opens it, so the
 * other name keeps its old content.
 *
 * `bash` is not confined by this: it runs in the root, but a shell can reach anything the user
 * can. The workspace guards the file tools, it is not a sandbox.
 */
import { constants, realpathSync, statSync } from "node:fs";
import { lstat, open, readlink, realpath, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { HeldFolder, WorkspaceEscapeError } from "./held-folder.js";

export { WorkspaceEscapeError };

/** A path that passed both checks. */
export interface ResolvedPath {
  /** The real absolute path (the root's real path, then the rest). */
  absolute: string;
  /** Relative to the root, `"."` for the root itself; for messages to the model. */
  relative: string;
  /** False when the path does not exist yet (its nearest existing ancestor was checked). */
  exists: boolean;
}

export interface WorkspaceOptions {
  /**
   * Contract: called after a path passed its checks and right before the tool walks to it to
   * open or write it (edit calls it again before it writes). Tests use it to play a
   * check-then-use race (swap a file or a folder for a symlink); it may be async.
   */
  beforeOpen?: (absolutePath: string) => void | Promise<void>;
}

export class Workspace {
  /** The root's real path (symlinks resolved). */
  readonly root: string;
  /** The root as given, made absolute (absolute paths under it are accepted too). */
  private readonly givenRoot: string;
  /** Per-path serialisation for writes and edits. */
  readonly locks = new PathLocks();
  private readonly beforeOpenHook: WorkspaceOptions["beforeOpen"];
  /** The root folder's identity: a root replaced later is refused. */
  private readonly rootId: { dev: number; ino: number };

  /** Throws when `root` does not exist or is not a folder (a caller's mistake). */
  constructor(root: string, options: WorkspaceOptions = {}) {
    this.givenRoot = path.resolve(root);
    let real: string;
    try {
      real = realpathSync(this.givenRoot);
    } catch {
      throw new Error(`Workspace: the folder ${this.givenRoot} does not exist. Create it, or pass an existing folder.`);
    }
    const info = statSync(real);
    if (!info.isDirectory()) {
      throw new Error(`Workspace: ${this.givenRoot} is not a folder. Pass a folder as the root.`);
    }
    this.root = real;
    this.rootId = { dev: info.dev, ino: info.ino };
    this.beforeOpenHook = options.beforeOpen;
  }

  /**
   * Resolves a path the model gave (relative to the root, or absolute inside it) and checks it
   * lexically and on disk. Throws `WorkspaceEscapeError` with a message the model can read.
   */
  async resolve(input: string): Promise<ResolvedPath> {
    // #region lab 8.1 resolve
    if (typeof input !== "string" || input.trim() === "") {
      throw new Error("The path is empty. Give a path relative to the workspace root.");
    }
    if (input.includes("\0")) throw new Error("The path contains a NUL character.");
    // 1. Lexical: `..` and absolute paths, before touching the disk.
    const lexical = this.lexicalRelative(input);
    if (lexical === undefined) {
      throw new WorkspaceEscapeError(
        `The path ${JSON.stringify(input)} is outside the workspace ${this.root}. ` +
          `Use a path inside it (relative paths are relative to the workspace root).`,
      );
    }
    // 2. On disk: the real path of the nearest existing ancestor must stay inside.
    const tail: string[] = [];
    let current = path.join(this.root, lexical);
    let real: string;
    for (;;) {
      try {
        real = await realpath(current);
        break;
      } catch (error) {
        if (!isCode(error, "ENOENT") && !isCode(error, "ENOTDIR")) throw error;
        // A link whose target is missing exists, but has no real path: refuse it.
        if (await lexists(current)) {
          throw new WorkspaceEscapeError(
            `The path ${JSON.stringify(input)} goes through a symbolic link whose target does ` +
              `not exist; it is refused.`,
          );
        }
        tail.unshift(path.basename(current));
        current = path.dirname(current);
      }
    }
    if (!this.contains(real)) {
      throw new WorkspaceEscapeError(
        `The path ${JSON.stringify(input)} leads outside the workspace through a symbolic link ` +
          `(to ${real}); it is refused.`,
      );
    }
    const absolute = path.join(real, ...tail);
    return {
      absolute,
      relative: path.relative(this.root, absolute) || ".",
      exists: tail.length === 0,
    };
    // #endregion
  }

  /**
   * Opens a checked path: runs the `beforeOpen` hook, walks to its folder (`openFolder`) and
   * opens it there (`openIn`). For reading: `flags` are `fs.constants` bits such as `O_RDONLY`.
   */
  async open(resolved: ResolvedPath, flags: number): Promise<FileHandle> {
    await this.beforeOpen(resolved.absolute);
    if (resolved.relative === ".") {
      const root = await HeldFolder.openRoot(this.root, this.rootId);
      return root.handle;
    }
    const folder = await this.openFolder(path.dirname(resolved.relative), { target: resolved.relative });
    try {
      return await this.openIn(folder, path.basename(resolved.relative), flags, resolved.relative);
    } finally {
      await folder.close();
    }
  }

  /**
   * Walks from the root to the folder `relativeDir` (relative to the root, as `ResolvedPath`
   * gives it), one folder at a time, following no symlink; with `create`, makes the missing
   * folders one level at a time. `target` is the path the tool was asked for, for messages.
   * The caller closes the folder.
   */
  openFolder(relativeDir: string, options: { create?: boolean; target: string }): Promise<HeldFolder> {
    return HeldFolder.walk(this.root, this.rootId, relativeDir, options);
  }

  /**
   * Opens `name` inside a held folder without following a symlink. `O_NOFOLLOW` and `O_NONBLOCK`
   * are added, so a FIFO or a device cannot block the open. Anything but a regular file or a
   * folder (a FIFO, a socket, a device) is refused after the open, and so is a regular file with
   * several hard links; then the descriptor's real path is checked (`verifyOpened`).
   */
  async openIn(folder: HeldFolder, name: string, flags: number, target: string): Promise<FileHandle> {
    let handle: FileHandle;
    try {
      handle = await open(folder.pathOf(name), flags | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      // With O_DIRECTORY a symlink is ENOTDIR too: only what is there now and is no link is "not a folder".
      const notFolder =
        isCode(error, "ENOTDIR") &&
        (await lstat(folder.pathOf(name)).then(
          (s) => !s.isSymbolicLink() && !s.isDirectory(),
          () => false,
        ));
      if (isCode(error, "ELOOP") || (isCode(error, "ENOTDIR") && !notFolder)) {
        throw new WorkspaceEscapeError(`${target} became a symbolic link after it was checked; it is refused.`);
      }
      if (isCode(error, "ENOENT")) {
        throw new Error(`${target} does not exist any more (it was removed or renamed after it was checked).`);
      }
      throw error;
    }
    try {
      const info = await handle.stat();
      if (!info.isFile() && !info.isDirectory()) {
        throw new Error(`${target} is not a regular file (a FIFO, socket or device); it is refused.`);
      }
      if (info.isFile() && info.nlink > 1) {
        throw new WorkspaceEscapeError(
          `${target} has ${info.nlink} hard links: another name for it may lie outside ` +
            `the workspace, so it is refused. Copy it (cp) to a new file to work on it.`,
        );
      }
      await this.verifyOpened(handle, path.join(folder.absolute, name));
    } catch (error) {
      await handle.close();
      throw error;
    }
    return handle;
  }

  /** Runs the `beforeOpen` hook, if any (`write` and `edit` call it before they walk). */
  async beforeOpen(absolutePath: string): Promise<void> {
    await this.beforeOpenHook?.(absolutePath);
  }

  /**
   * Checks, after the open, that a descriptor really lies inside the root: on Linux through
   * `/proc/self/fd`, elsewhere by comparing the descriptor with the real path's inode.
   */
  async verifyOpened(handle: FileHandle, expected: string): Promise<void> {
    // #region lab 8.1 verifyOpened
    let actual: string | undefined;
    try {
      actual = await readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      actual = undefined;
    }
    if (actual === undefined) {
      const [opened, real] = await Promise.all([handle.stat(), realpath(expected).catch(() => "")]);
      const onDisk = real === "" ? undefined : await lstat(real).catch(() => undefined);
      if (onDisk !== undefined && onDisk.ino === opened.ino && onDisk.dev === opened.dev) {
        actual = real;
      }
    }
    if (actual === undefined || !this.contains(actual)) {
      throw new WorkspaceEscapeError(
        `${path.relative(this.root, expected) || "."} was moved outside the workspace while it ` +
          `was being opened; it is refused.`,
      );
    }
    // #endregion
  }

  /** True when a real absolute path is the root or lies under it. */
  contains(realAbsolute: string): boolean {
    const relative = path.relative(this.root, realAbsolute);
    return isInside(relative);
  }

  /** The input relative to the root after lexical resolution, or undefined when outside. */
  private lexicalRelative(input: string): string | undefined {
    for (const base of [this.root, this.givenRoot]) {
      const relative = path.relative(base, path.resolve(base, input));
      if (isInside(relative)) return relative;
    }
    return undefined;
  }
}

/**
 * Runs tasks one at a time per key (a real path), in the order they were queued. Tasks on other
 * keys run concurrently. A failing task does not stop the ones queued after it.
 */
export class PathLocks {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    // #region lab 8.2 PathLocks.run
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
    // #endregion
  }

  /** How many keys have queued or running tasks (for tests: the map does not grow forever). */
  get size(): number {
    return this.tails.size;
  }
}

/** A `path.relative` result that does not climb out of its base. */
function isInside(relative: string): boolean {
  if (relative === "") return true;
  if (path.isAbsolute(relative)) return false;
  return relative !== ".." && !relative.startsWith(`..${path.sep}`);
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

async function lexists(target: string): Promise<boolean> {
  try {
    await lstat(target);
    return true;
  } catch {
    return false;
  }
}
