/**
 * The `read` tool: shows a window of a text file with line numbers.
 *
 * A model's context is small, so the window is bounded twice: by lines and by bytes. When the
 * output is cut, it ends with a hint that says exactly how to continue (`offset=N`).
 *
 * The whole file is loaded to find its lines, so files larger than `READ_MAX_FILE_BYTES`
 * (64 MiB) are refused, with a hint to look at parts of them with `bash` (`head`, `sed -n`, `grep`).
 */
import { constants } from "node:fs";
import { Type } from "typebox";
import type { AgentTool } from "../types.js";
import { repairPath } from "./repairs.js";
import type { Workspace } from "./workspace.js";

/** The default caps of one read. */
export const READ_MAX_LINES = 2000;
export const READ_MAX_BYTES = 50 * 1024;
/** The largest file `read` loads at all. */
export const READ_MAX_FILE_BYTES = 64 * 1024 * 1024;

/** Where the window is and how it was cut. */
export interface ReadWindow {
  /** The first line shown, 1-based (0 when the file is empty). */
  startLine: number;
  /** The last line shown, 1-based (0 when nothing is shown). */
  endLine: number;
  totalLines: number;
  /** Why the output stops before the end of the file: `lines`, `bytes`, or null (it does not). */
  truncatedBy: "lines" | "bytes" | null;
}

export interface FormatReadOptions {
  /** The first line to show, 1-based. Defaults to 1. */
  offset?: number;
  /** The most lines to show. Defaults to (and is capped by) `maxLines`. */
  limit?: number;
  maxLines?: number;
  maxBytes?: number;
}

/**
 * Numbers the lines of `text` (`"  12\tcode"`) from `offset`, up to `limit` lines and `maxBytes`
 * bytes of output, and appends a continuation hint when the window ends before the file does.
 * Throws when `offset` lies past the end of the file.
 */
export function formatReadOutput(text: string, options: FormatReadOptions = {}): { text: string; window: ReadWindow } {
  // #region lab 8.3 formatReadOutput
  const maxLines = options.maxLines ?? READ_MAX_LINES;
  const maxBytes = options.maxBytes ?? READ_MAX_BYTES;
  const lines = text === "" ? [] : text.replace(/\r?\n$/, "").split(/\r?\n/);
  const totalLines = lines.length;
  const offset = options.offset ?? 1;
  if (totalLines === 0) {
    return { text: "(empty file)", window: { startLine: 0, endLine: 0, totalLines: 0, truncatedBy: null } };
  }
  if (offset > totalLines) {
    throw new Error(`offset ${offset} is past the end of the file (${totalLines} lines).`);
  }
  const limit = Math.min(options.limit ?? maxLines, maxLines);
  const last = Math.min(totalLines, offset + limit - 1);
  const width = String(last).length;
  const out: string[] = [];
  let bytes = 0;
  let truncatedBy: ReadWindow["truncatedBy"] = null;
  let endLine = offset - 1;
  for (let n = offset; n <= last; n++) {
    let line = `${String(n).padStart(width)}\t${lines[n - 1]}`;
    const size = Buffer.byteLength(line, "utf8") + 1;
    if (bytes + size > maxBytes) {
      if (out.length === 0) {
        // One line longer than the whole budget: show its beginning, then move on.
        line = `${Buffer.from(line, "utf8")
          .subarray(0, maxBytes)
          .toString("utf8")
          .replace(/\uFFFD$/, "")} … [line cut at ${maxBytes} bytes]`;
        out.push(line);
        endLine = n;
      }
      truncatedBy = "bytes";
      break;
    }
    out.push(line);
    bytes += size;
    endLine = n;
  }
  if (truncatedBy === null && endLine < totalLines) truncatedBy = "lines";
  if (truncatedBy !== null) {
    const why = truncatedBy === "bytes" ? `, ${formatSize(maxBytes)} limit` : "";
    out.push("", `[Showing lines ${offset}-${endLine} of ${totalLines}${why}. Use offset=${endLine + 1} to continue.]`);
  }
  return { text: out.join("\n"), window: { startLine: offset, endLine, totalLines, truncatedBy } };
  // #endregion
}

const readParameters = Type.Object({
  path: Type.String({ description: "File path, relative to the workspace root." }),
  offset: Type.Optional(Type.Integer({ minimum: 1, description: "First line to show (1-based)." })),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: "Most lines to show." })),
});

/** What `read` reports to programs. */
export interface ReadDetails extends ReadWindow {
  /** Relative to the workspace root. */
  path: string;
  /** The file's size in bytes. */
  bytes: number;
}

/** The `read` tool over one workspace. */
export function createReadTool(
  workspace: Workspace,
  caps: { maxLines?: number; maxBytes?: number; maxFileBytes?: number } = {},
): AgentTool<typeof readParameters, ReadDetails> {
  const { maxFileBytes = READ_MAX_FILE_BYTES, ...windowCaps } = caps;
  return {
    name: "read",
    label: "Read file",
    description:
      `Read a text file with line numbers. Shows at most ${caps.maxLines ?? READ_MAX_LINES} lines ` +
      `or ${formatSize(caps.maxBytes ?? READ_MAX_BYTES)}; use offset and limit for more. ` +
      `Files over ${formatSize(maxFileBytes)} are refused (use bash head/sed/grep).`,
    parameters: readParameters,
    // The repairs of repairs.ts: `file_path`/`filePath` → `path`.
    prepareArguments: repairPath,
    replay: "safe", // reading twice changes nothing
    async execute(_toolCallId, params, signal) {
      signal?.throwIfAborted();
      const resolved = await workspace.resolve(params.path);
      if (!resolved.exists) throw new Error(`${resolved.relative} does not exist.`);
      const handle = await workspace.open(resolved, constants.O_RDONLY);
      let data: Buffer;
      try {
        const info = await handle.stat();
        if (info.isDirectory()) {
          throw new Error(`${resolved.relative} is a folder; use ls to list it.`);
        }
        if (info.size > maxFileBytes) {
          throw new Error(
            `${resolved.relative} is ${info.size} bytes, more than read loads (${formatSize(maxFileBytes)}). ` +
              `Look at parts of it with bash: head -n 100 ${resolved.relative}, ` +
              `sed -n '1000,1100p' ${resolved.relative}, or grep -n PATTERN ${resolved.relative}.`,
          );
        }
        data = await handle.readFile();
      } finally {
        await handle.close();
      }
      if (data.subarray(0, 8192).includes(0)) {
        throw new Error(`${resolved.relative} looks like a binary file (${data.length} bytes); it is not shown.`);
      }
      const { text, window } = formatReadOutput(data.toString("utf8"), {
        ...(params.offset !== undefined && { offset: params.offset }),
        ...(params.limit !== undefined && { limit: params.limit }),
        ...windowCaps,
      });
      return {
        content: [{ type: "text", text }],
        details: { path: resolved.relative, bytes: data.length, ...window },
      };
    },
  };
}

/** `64 MiB`, `50 KB`, `100 bytes`: a size for messages (exact: KB and MiB only when whole). */
export function formatSize(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}
