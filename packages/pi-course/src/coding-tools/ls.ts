/**
 * The `ls` tool: lists one folder of the workspace, sorted, folders marked with `/` and symbolic
 * links with `@`. The folder is opened like a file (walked to with descriptors, no symlink
 * followed, its real path checked after the open) and read through that descriptor where the
 * platform allows (Linux).
 */
import { constants } from "node:fs";
import { readdir } from "node:fs/promises";
import { Type } from "typebox";
import type { AgentTool } from "../types.js";
import { repairPath } from "./repairs.js";
import { hasDescriptorPaths } from "./held-folder.js";
import type { Workspace } from "./workspace.js";

/** The default cap on entries shown. */
export const LS_MAX_ENTRIES = 500;

/** One entry of a listing. */
export interface ListEntry {
  name: string;
  kind: "file" | "directory" | "symlink" | "other";
}

const lsParameters = Type.Object({
  path: Type.Optional(Type.String({ description: "Folder, relative to the workspace root (default: the root)." })),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: "Most entries to show." })),
});

/** What `ls` reports to programs. */
export interface LsDetails {
  /** Relative to the workspace root. */
  path: string;
  /** The entries shown, sorted by name. */
  entries: ListEntry[];
  /** How many entries the folder has. */
  total: number;
  truncated: boolean;
}

/** The `ls` tool over one workspace. */
export function createLsTool(workspace: Workspace): AgentTool<typeof lsParameters, LsDetails> {
  return {
    name: "ls",
    label: "List folder",
    description: "List a folder of the workspace: folders end with /, symbolic links with @.",
    parameters: lsParameters,
    // The repairs of repairs.ts: `file_path`/`filePath` → `path`.
    prepareArguments: repairPath,
    replay: "safe", // listing twice changes nothing
    async execute(_toolCallId, params, signal) {
      signal?.throwIfAborted();
      const resolved = await workspace.resolve(params.path ?? ".");
      if (!resolved.exists) throw new Error(`${resolved.relative} does not exist.`);
      const handle = await workspace
        .open(resolved, constants.O_RDONLY | constants.O_DIRECTORY)
        .catch((error: unknown) => {
          if ((error as { code?: string }).code === "ENOTDIR") {
            throw new Error(`${resolved.relative} is a file, not a folder; use read to see it.`);
          }
          throw error;
        });
      let dirents;
      try {
        // Through the descriptor on Linux, so a folder swapped after the walk is not listed.
        const where = hasDescriptorPaths() ? `/proc/self/fd/${handle.fd}` : resolved.absolute;
        dirents = await readdir(where, { withFileTypes: true });
      } finally {
        await handle.close();
      }
      const all: ListEntry[] = dirents
        .map((d) => ({
          name: d.name,
          kind: d.isDirectory()
            ? ("directory" as const)
            : d.isSymbolicLink()
              ? ("symlink" as const)
              : d.isFile()
                ? ("file" as const)
                : ("other" as const),
        }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const limit = params.limit ?? LS_MAX_ENTRIES;
      const entries = all.slice(0, limit);
      const lines = entries.map((e) => e.name + (e.kind === "directory" ? "/" : e.kind === "symlink" ? "@" : ""));
      if (lines.length === 0) lines.push("(empty folder)");
      if (all.length > entries.length) {
        lines.push("", `[Showing ${entries.length} of ${all.length} entries. Use limit=${all.length} to see all.]`);
      }
      return {
        content: [{ type: "text", text: lines.join("\n") }],
        details: { path: resolved.relative, entries, total: all.length, truncated: all.length > entries.length },
      };
    },
  };
}
