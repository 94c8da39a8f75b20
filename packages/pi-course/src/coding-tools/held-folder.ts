/**
 * `HeldFolder`: a folder of the workspace held open by a descriptor, reached from the root one
 * name at a time without following any symbolic link.
 *
 * A checked path can change before it is used: another process can swap a folder on it for a
 * symlink to a folder outside, and a second system call on the same path then goes outside. Node
 * has no `openat`, but on Linux the name `/proc/self/fd/<fd>/<name>` looks `<name>` up inside the
 * folder that descriptor holds, wherever that folder is now. So the walk opens each folder with
 * `O_DIRECTORY | O_NOFOLLOW` inside the one held before it (creating it there first when asked,
 * one level at a time), and the tools open, create, rename and remove names inside the last
 * held folder only. No path is resolved twice, so a swap has no window to win.
 *
 * Elsewhere (macOS and the BSDs have no `/proc/self/fd`), names are plain absolute paths: each
 * folder is still opened without following a link and the opened file is checked after the open
 * (`Workspace.verifyOpened`), but a swap between two system calls can win. There the window is
 * narrowed, not closed.
 */
import { constants, existsSync } from "node:fs";
import { lstat, mkdir, open, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { PiCourseError } from "../base/errors.js";

/** A path the model asked for lies outside the workspace. */
export class WorkspaceEscapeError extends PiCourseError {
  override name = "WorkspaceEscapeError";
  /** Stable: `"WORKSPACE_ESCAPE"`. */
  override readonly code = "WORKSPACE_ESCAPE";
}

let descriptorPaths: boolean | undefined;

/** True where `/proc/self/fd/<fd>/<name>` names a file inside a held folder (Linux). */
export function hasDescriptorPaths(): boolean {
  descriptorPaths ??= process.platform === "linux" && existsSync("/proc/self/fd");
  return descriptorPaths;
}

const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export class HeldFolder {
  private constructor(
    /** The open folder. */
    readonly handle: FileHandle,
    /** Its real path when it was opened (for messages; it may have moved since). */
    readonly absolute: string,
    /** Relative to the workspace root, `"."` for the root. */
    readonly relative: string,
  ) {}

  /**
   * Opens the workspace root, which must still be the folder `id` names (device and inode as
   * seen when the workspace was created).
   */
  static async openRoot(root: string, id: { dev: number; ino: number }): Promise<HeldFolder> {
    const handle = await open(root, FOLDER_FLAGS);
    const info = await handle.stat().catch(async (error: unknown) => {
      await handle.close();
      throw error;
    });
    if (info.dev !== id.dev || info.ino !== id.ino) {
      await handle.close();
      throw new Error(
        `The workspace folder ${root} was replaced after the workspace was created; every path is refused.`,
      );
    }
    return new HeldFolder(handle, root, ".");
  }

  /**
   * Walks from the root (checked against `id`) to the folder `relativeDir`, one folder at a time,
   * following no symlink; with `create`, makes each missing folder inside the one held before it.
   * `target` is the path the tool was asked for, for messages. The caller closes the result.
   */
  static async walk(
    root: string,
    id: { dev: number; ino: number },
    relativeDir: string,
    options: { create?: boolean; target: string },
  ): Promise<HeldFolder> {
    let folder = await HeldFolder.openRoot(root, id);
    try {
      for (const name of relativeDir.split(path.sep)) {
        if (name === "." || name === "") continue;
        const next = await folder.openChild(name, options.create ?? false, options.target);
        await folder.close();
        folder = next;
      }
      return folder;
    } catch (error) {
      await folder.close();
      throw error;
    }
  }

  /** The name `name` inside this folder, for file system calls. */
  pathOf(name: string): string {
    return hasDescriptorPaths() ? `/proc/self/fd/${this.handle.fd}/${name}` : path.join(this.absolute, name);
  }

  /**
   * Opens the folder `name` inside this one without following a link; with `create`, makes it
   * first when it is missing. `target` (the path the tool was asked for) goes into messages.
   * A link where a folder should be is a `WorkspaceEscapeError`; every refusal says what happened.
   */
  async openChild(name: string, create: boolean, target: string): Promise<HeldFolder> {
    const where = this.pathOf(name);
    const relative = this.relative === "." ? name : path.join(this.relative, name);
    for (let attempt = 0; ; attempt++) {
      try {
        return new HeldFolder(await open(where, FOLDER_FLAGS), path.join(this.absolute, name), relative);
      } catch (error) {
        if (!(create && attempt === 0 && code(error) === "ENOENT")) throw await explain(error, where, relative, target);
      }
      try {
        await mkdir(where);
      } catch (error) {
        if (code(error) === "ENOENT") {
          throw new Error(
            `${target} was not written: the folder ${this.relative} was removed while its path was ` +
              `being created. List the folder and try again.`,
          );
        }
        if (code(error) !== "EEXIST") throw await explain(error, where, relative, target);
      }
    }
  }

  /**
   * What to say when writing `target` inside this folder failed: a folder removed meanwhile
   * (`ENOENT`) gets words; any other error is returned as it is.
   */
  writeError(error: unknown, target: string): unknown {
    if (code(error) !== "ENOENT") return error;
    return new Error(
      `${target} was not written: the folder ${this.relative} was removed while it was being ` +
        `written. Nothing was changed; list the folder and try again.`,
    );
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/** Turns a failed step of the walk into an error that says what changed and what to do. */
async function explain(error: unknown, where: string, folder: string, target: string): Promise<Error> {
  switch (code(error)) {
    case "ELOOP":
    case "ENOTDIR": {
      // A file is not a folder; anything else was a symlink when it was opened (it may be
      // a folder again already, when another process swaps it back and forth).
      const file = await lstat(where).then(
        (s) => !s.isDirectory() && !s.isSymbolicLink(),
        () => false,
      );
      if (file) return new Error(`${target} cannot be reached: ${folder} is not a folder.`);
      return new WorkspaceEscapeError(
        `${target} is refused: the folder ${folder} became a symbolic link after the path was ` +
          `checked, so it may have been moved outside the workspace. Nothing was read or written.`,
      );
    }
    case "ENOENT":
      return new Error(
        `${target} cannot be reached: the folder ${folder} does not exist (it was removed or ` +
          `renamed after the path was checked). Nothing was read or written; list the folder and try again.`,
      );
    case "EACCES":
    case "EPERM":
      return new Error(`${target} cannot be reached: permission denied on the folder ${folder}.`);
    default:
      return error instanceof Error ? error : new Error(String(error));
  }
}

function code(error: unknown): unknown {
  return typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
}
