/**
 * The stdio framing of MCP: one JSON-RPC message per line, UTF-8, ended by `"\n"` (a `"\r"`
 * before it is accepted and dropped). Bytes arrive in chunks of any size: a big message comes in
 * many 64 KiB reads, two messages may share one read, and a multi-byte character may be split.
 *
 * `LineDecoder` joins the pieces of a line only once the line ends (linear in the bytes, however
 * they are chunked) and refuses a line longer than `maxLineBytes` instead of holding unbounded
 * memory: the official SDK's cap is 10 MiB, and a server that writes more without a newline has
 * lost its framing for good.
 */
import { PiCourseError } from "../base/errors.js";

/** Thrown by `LineDecoder.push` when a line grows past the cap. */
export class LineTooLongError extends PiCourseError {
  override readonly name = "LineTooLongError";
  /** Stable: `"LINE_TOO_LONG"`. */
  override readonly code = "LINE_TOO_LONG";
  constructor(readonly limit: number) {
    super(
      `the server sent a line longer than ${formatBytes(limit)} without a newline; ` +
        "the stream cannot be read any further (raise maxLineBytes if the server really sends messages that big)",
    );
  }
}

/** The default cap on one line: 10 MiB, as the official SDK. */
export const DEFAULT_MAX_LINE_BYTES = 10 * 1024 * 1024;

/** Splits a byte stream into lines (without their `"\n"` or `"\r\n"`). */
export class LineDecoder {
  /** Chunks of the line being read (none holds a `"\n"`). */
  private parts: Buffer[] = [];
  private partBytes = 0;

  constructor(private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES) {}

  /**
   * Reads the next chunk; returns the lines it completed, in order (empty lines included, for
   * the caller to skip). Throws `LineTooLongError` when the line being read passes the cap.
   */
  push(chunk: Buffer): string[] {
    // #region lab 17.1 LineDecoder.push
    const lines: string[] = [];
    let start = 0;
    let newline = chunk.indexOf(10, start);
    while (newline !== -1) {
      let line: Buffer;
      if (this.parts.length === 0) line = chunk.subarray(start, newline);
      else {
        this.parts.push(chunk.subarray(start, newline));
        line = Buffer.concat(this.parts, this.partBytes + newline - start);
        this.parts = [];
        this.partBytes = 0;
      }
      if (line.length > this.maxLineBytes) throw new LineTooLongError(this.maxLineBytes);
      const end = line.length > 0 && line[line.length - 1] === 13 ? line.length - 1 : line.length;
      lines.push(line.toString("utf8", 0, end));
      start = newline + 1;
      newline = chunk.indexOf(10, start);
    }
    if (start < chunk.length) {
      this.parts.push(chunk.subarray(start));
      this.partBytes += chunk.length - start;
      if (this.partBytes > this.maxLineBytes) throw new LineTooLongError(this.maxLineBytes);
    }
    return lines;
    // #endregion
  }

  /** Bytes of an unfinished line held (for a diagnostic when the stream ends mid-line). */
  get pending(): number {
    return this.partBytes;
  }
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
