/**
 * Chapter 08: the coding tools, `read`, `write`, `edit`, `ls` and `bash`, over one workspace.
 *
 * ```ts
 * const tools = createCodingTools("/path/to/project");
 * agentLoop([userMessage("Fix the failing test")], { messages: [], tools }, { model });
 * ```
 */
import type { AgentTool } from "../types.js";
import { createBashTool, type BashToolOptions } from "./bash.js";
import { createEditTool } from "./edit.js";
import { createLsTool } from "./ls.js";
import { createReadTool } from "./read.js";
import { createWriteTool } from "./write.js";
import { Workspace, type WorkspaceOptions } from "./workspace.js";

export interface CodingToolsOptions extends WorkspaceOptions {
  /** Caps of `read` (`maxFileBytes`: the largest file it loads, default 64 MiB). */
  read?: { maxLines?: number; maxBytes?: number; maxFileBytes?: number };
  /** Limits of `bash`. */
  bash?: BashToolOptions;
}

/**
 * The five coding tools over the folder `root` (or an existing `Workspace`), in the order
 * `read`, `write`, `edit`, `ls`, `bash`. Throws when `root` is not an existing folder. A
 * relative `root` is resolved against the current folder once, here. Near-miss arguments are
 * repaired on a copy before validation (the transcript keeps what the model sent), and nothing
 * else is guessed: `file_path` or `filePath` (with no `path`) becomes `path` for read, write, edit
 * and ls; for edit, a flat `oldText`/`newText` or `old_string`/`new_string` pair (with no `edits`)
 * becomes `edits: [{ oldText, newText }]`.
 */
export function createCodingTools(root: string | Workspace, options: CodingToolsOptions = {}): AgentTool<any, any>[] {
  const workspace = typeof root === "string" ? new Workspace(root, options) : root;
  return [
    createReadTool(workspace, options.read),
    createWriteTool(workspace),
    createEditTool(workspace),
    createLsTool(workspace),
    createBashTool(workspace, options.bash),
  ];
}

export { createBashTool, runCommand } from "./bash.js";
export { commandEnvironment } from "./processes.js";
export type { BashDetails, BashToolOptions, CommandResult, RunCommandOptions } from "./bash.js";
export { applyEdits, createEditTool } from "./edit.js";
export type { AppliedEdit, EditDetails, TextEdit } from "./edit.js";
export { createLsTool } from "./ls.js";
export type { ListEntry, LsDetails } from "./ls.js";
export { createReadTool, formatReadOutput } from "./read.js";
export type { FormatReadOptions, ReadDetails, ReadWindow } from "./read.js";
export { createWriteTool, writeFileAtomic } from "./write.js";
export type { AtomicWriteOptions, WriteDetails } from "./write.js";
export type { HeldFolder } from "./held-folder.js";
export { PathLocks, Workspace, WorkspaceEscapeError } from "./workspace.js";
export type { ResolvedPath, WorkspaceOptions } from "./workspace.js";
