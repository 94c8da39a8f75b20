/**
 * The `write` tool: creates or replaces a file inside the workspace, atomically.
 *
 * Atomic means a reader sees the old content or the new, never half of it: the content goes to
 * a temporary file in the same folder, is flushed, and is renamed over the target (`rename` is
 * atomic within one file system, and replaces a symlink rather than writing through it). The
 * temporary file is named `.pi-<16 hex>.tmp`, whatever the target's name is. Writes
 * to one path are serialised, so two writes never interleave and the last one queued wins.
 *
 * The tool walks to the target's folder with descriptors (`Workspace.openFolder`, creating the
 * missing folders one level at a time) and gives `writeFileAtomic` a name inside that held folder,
 * so the temporary file, the rename and its target are all in the folder that was walked to.
 */
import { constants } from "node:fs";
import { lstat, open, rename, stat, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Type } from "typebox";
import type { AgentTool } from "../types.js";
import { repairPath } from "./repairs.js";
import type { Workspace } from "./workspace.js";

/** What `writeFileAtomic` may be told. */
export interface AtomicWriteOptions {
  /** File mode for a new file (before the umask). Defaults to the old file's mode, or 0o644. */
  mode?: number;
  /** Contract: checks the opened temporary file (e.g. `Workspace.verifyOpened`); may throw. */
  verify?: (handle: FileHandle, tempPath: string) => Promise<void>;
}

/**
 * Writes `content` to `target` through a temporary file and a rename. On any failure the target
 * is unchanged and the temporary file is removed. Does not lock: callers serialise per path.
 */
export async function writeFileAtomic(
  target: string,
  content: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  // #region lab 8.2 writeFileAtomic
  const dir = path.dirname(target);
  // A short fixed-length name: the target's own name may already be near the 255-byte limit.
  const temp = path.join(dir, `.pi-${randomBytes(8).toString("hex")}.tmp`);
  const mode =
    options.mode ??
    (await stat(target).then(
      (s) => s.mode & 0o7777,
      () => 0o644,
    ));
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(temp, flags, mode);
  let renamed = false;
  try {
    try {
      await options.verify?.(handle, temp);
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
    renamed = true;
  } finally {
    if (!renamed) await unlink(temp).catch(() => {});
  }
  // #endregion
}

const writeParameters = Type.Object({
  path: Type.String({ description: "File path, relative to the workspace root." }),
  content: Type.String({ description: "The complete new content of the file." }),
});

/** What `write` reports to programs. */
export interface WriteDetails {
  /** Relative to the workspace root. */
  path: string;
  /** Bytes written (UTF-8). */
  bytes: number;
  /** True when the file did not exist before. */
  created: boolean;
}

/** The `write` tool over one workspace. */
export function createWriteTool(workspace: Workspace): AgentTool<typeof writeParameters, WriteDetails> {
  return {
    name: "write",
    label: "Write file",
    description:
      "Create or overwrite a file with the given content (parent folders are created). " +
      "Use edit for a small change to an existing file.",
    parameters: writeParameters,
    // The repairs of repairs.ts: `file_path`/`filePath` → `path`.
    prepareArguments: repairPath,
    executionMode: "sequential",
    async execute(_toolCallId, params, signal) {
      signal?.throwIfAborted();
      const resolved = await workspace.resolve(params.path);
      if (resolved.relative === ".") throw new Error("The path is the workspace root, a folder; give a file path.");
      return workspace.locks.run(resolved.absolute, async () => {
        await workspace.beforeOpen(resolved.absolute);
        // Every step happens inside the held folder: a folder swapped on the path is not followed.
        const folder = await workspace.openFolder(path.dirname(resolved.relative), {
          create: true,
          target: resolved.relative,
        });
        let existed: boolean;
        try {
          const target = folder.pathOf(path.basename(resolved.relative));
          const old = await lstat(target).catch((error: unknown) => {
            if ((error as { code?: unknown }).code === "ENOENT") return undefined;
            throw error;
          });
          if (old !== undefined && !old.isFile() && !old.isSymbolicLink()) {
            throw new Error(`${resolved.relative} exists and is not a file.`);
          }
          existed = old !== undefined;
          // A symlink put there after the check is replaced by the rename, never written through.
          await writeFileAtomic(target, params.content, {
            mode: old?.isFile() ? old.mode & 0o7777 : 0o644,
            verify: (handle, temp) => workspace.verifyOpened(handle, path.join(folder.absolute, path.basename(temp))),
          }).catch((error: unknown) => {
            throw folder.writeError(error, resolved.relative);
          });
        } finally {
          await folder.close();
        }
        const bytes = Buffer.byteLength(params.content, "utf8");
        return {
          content: [
            {
              type: "text",
              text: `${existed ? "Wrote" : "Created"} ${resolved.relative} (${bytes} bytes).`,
            },
          ],
          details: { path: resolved.relative, bytes, created: !existed },
        };
      });
    },
  };
}
