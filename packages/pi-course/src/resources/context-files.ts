/**
 * Context files: the `AGENTS.md` most repositories carry (or `CLAUDE.md` where a folder has no
 * `AGENTS.md`), shown to the model in the system prompt with their paths.
 *
 * Looked for in the user's folder (`~/.pi-course/AGENTS.md`) first, then in every folder from the
 * filesystem root down to the working folder, outermost first, so the closest file is read last
 * and wins where they disagree. The walk does not stop at the git root (a file in a parent
 * folder, e.g. a monorepo's or the home folder's, applies too). One file per folder; a file is
 * read once even if two paths reach it. Plain text the user can read: no trust needed. A file that
 * is a link to somewhere outside its folder (a repository's `AGENTS.md` pointing at a key in the
 * home folder) is left out with a warning: it would send that file to the model's provider.
 *
 * A file over the size cap is cut, with a visible note in the prompt and a warning, rather than
 * filling the model's context.
 */
import { openSync, closeSync, fstatSync, readSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { foldersFromRoot } from "./folders.js";
import type { ResourceScope, ResourceWarning } from "./types.js";

/** The names looked for in each folder, in order: the first that is a file is that folder's. */
export const CONTEXT_FILE_NAMES = ["AGENTS.md", "CLAUDE.md"] as const;

/** The most of one context file the model sees (64 KiB); the rest is cut with a note. */
export const CONTEXT_FILE_MAX_BYTES = 64 * 1024;

/** One context file as the model sees it. */
export interface ContextFile {
  /** Absolute path. */
  path: string;
  /** `user` for `~/.pi-course/AGENTS.md`, `project` for the walk. */
  scope: Exclude<ResourceScope, "flag">;
  /** The text shown (cut to the cap, with the note at its end when `truncated`). */
  text: string;
  /** The file's size in bytes. */
  bytes: number;
  truncated: boolean;
}

export interface ContextFileOptions {
  /** The working folder: the walk goes from the filesystem root down to it. */
  cwd: string;
  /** The user's pi-course folder (`~/.pi-course`): its `AGENTS.md` comes first. */
  piHome?: string;
  /** The cap per file in bytes (default `CONTEXT_FILE_MAX_BYTES`). */
  maxBytes?: number;
}

/** The note that ends a cut file (also what the model reads). */
export function truncationNote(file: string, bytes: number, maxBytes: number): string {
  return `[… cut: ${file} is ${bytes} bytes; only the first ${maxBytes} bytes are shown. Read the file for the rest.]`;
}

/**
 * The context files for `cwd`, in the order the model reads them: the user's, then the walk from
 * the root down. Never throws: an unreadable file is a warning.
 */
export function findContextFiles(options: ContextFileOptions): { files: ContextFile[]; warnings: ResourceWarning[] } {
  // #region lab 12.1 findContextFiles
  const maxBytes = options.maxBytes ?? CONTEXT_FILE_MAX_BYTES;
  const files: ContextFile[] = [];
  const warnings: ResourceWarning[] = [];
  const seen = new Set<string>();
  const candidates: { folder: string; scope: ContextFile["scope"] }[] = [];
  if (options.piHome !== undefined) candidates.push({ folder: options.piHome, scope: "user" });
  for (const folder of foldersFromRoot(options.cwd)) candidates.push({ folder, scope: "project" });
  for (const { folder, scope } of candidates) {
    const file = firstFile(folder);
    if (file === undefined) continue;
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      real = file;
    }
    if (outside(folder, real)) {
      warnings.push({ path: file, message: linksOutside(real, folder) });
      continue;
    }
    if (seen.has(real)) continue;
    seen.add(real);
    try {
      files.push(readCapped(file, scope, maxBytes));
    } catch (error) {
      warnings.push({
        path: file,
        message: `cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)}); it is left out`,
      });
      continue;
    }
    const last = files.at(-1)!;
    if (last.truncated) {
      warnings.push({
        path: file,
        message: `it is ${last.bytes} bytes, over the cap of ${maxBytes}: the model sees the first ${maxBytes} bytes`,
      });
    }
  }
  return { files, warnings };
  // #endregion
}

/** The warning for a context file whose real path is outside the folder that holds it. */
export function linksOutside(real: string, folder: string): string {
  return `it links to ${real}, outside ${folder}: it is left out (a context file is read only inside the folder that holds it)`;
}

/** Whether `real` (a resolved path) lies outside `folder` (resolved too, when it can be). */
function outside(folder: string, real: string): boolean {
  let home = folder;
  try {
    home = realpathSync(folder);
  } catch {
    // keep the path as given
  }
  const relative = path.relative(home, real);
  return relative.startsWith(`..${path.sep}`) || relative === ".." || path.isAbsolute(relative);
}

/** The folder's context file: the first of `CONTEXT_FILE_NAMES` that is a regular file. */
function firstFile(folder: string): string | undefined {
  for (const name of CONTEXT_FILE_NAMES) {
    const file = path.join(folder, name);
    try {
      if (statSync(file).isFile()) return file;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** Reads at most `maxBytes` of `file` (never more into memory), cut at a whole character. */
function readCapped(file: string, scope: ContextFile["scope"], maxBytes: number): ContextFile {
  const fd = openSync(file, "r");
  try {
    const bytes = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.min(bytes, maxBytes) + 4);
    const got = readSync(fd, buffer, 0, buffer.length, 0);
    const truncated = got > maxBytes;
    let end = Math.min(got, maxBytes);
    // never cut a UTF-8 sequence: step back over continuation bytes to the lead byte
    if (truncated) while (end > 0 && (buffer[end]! & 0xc0) === 0x80) end--;
    let text = buffer
      .subarray(0, end)
      .toString("utf8")
      .replace(/^\uFEFF/, "");
    if (truncated) text = `${text}\n${truncationNote(file, bytes, maxBytes)}`;
    return { path: file, scope, text, bytes, truncated };
  } finally {
    closeSync(fd);
  }
}

/**
 * The system prompt's section for `files` (empty text when there are none): one
 * `<project_instructions path="…">` block per file inside `<project_context>`.
 */
export function contextFilesSection(files: readonly ContextFile[]): string {
  if (files.length === 0) return "";
  const blocks = files.map(
    (f) => `<project_instructions path="${f.path}">\n${f.text.trimEnd()}\n</project_instructions>`,
  );
  return [
    "<project_context>",
    "Instructions from AGENTS.md (or CLAUDE.md) files, the user's first, then from the outermost folder down to the",
    "working folder; where they disagree, the later (closer) file wins.",
    ...blocks,
    "</project_context>",
  ].join("\n");
}
