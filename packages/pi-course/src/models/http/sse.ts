/**
 * Server-sent events: from a byte stream to `{event, data}` frames, whatever the chunking.
 *
 * Bytes arrive in reads of any size: a line, a `\r\n` pair or a multi-byte UTF-8 character may
 * be split across two reads. `readSse` decodes UTF-8 in streaming mode; `SseDecoder` splits the
 * text into lines (`\n`, `\r\n` or `\r`) and lines into frames, following the WHATWG
 * event-stream rules: `data:` lines of one frame are joined with `\n`, `event:` names the frame
 * (default `"message"`), lines starting with `:` are comments (keep-alives), a blank line ends
 * the frame. A frame with no `data:` line is not dispatched.
 *
 * Leniency: at the end of the stream, a last line without its newline and a frame without its
 * blank line are still delivered (a server that closes right after its last `data:` line loses
 * nothing; a frame cut mid-line is then malformed data, which the caller reports).
 *
 * Cost: linear in the text, whatever the chunking (a long line split over many reads is joined
 * once, when it ends).
 */

/** One server-sent event. */
export interface SseEvent {
  /** The `event:` field, or `"message"` when the frame had none. */
  event: string;
  /** The `data:` lines of the frame, joined with `"\n"`. */
  data: string;
  /** The `id:` field, when the frame had one. */
  id?: string;
  /** The `retry:` field (milliseconds to wait before reconnecting), when the frame had a valid one. */
  retry?: number;
}

/** Splits decoded text into SSE frames; feed it text in pieces of any size. */
export class SseDecoder {
  /** Pieces of the line being read (no line break seen yet). */
  private lineParts: string[] = [];
  /** The previous piece ended with `\r`: a `\n` starting the next piece belongs to it. */
  private afterCR = false;
  private eventName = "";
  private dataLines: string[] = [];
  private id: string | undefined = undefined;
  private retry: number | undefined = undefined;

  /** Reads the next piece of text; returns the frames it completed, in order. */
  push(text: string): SseEvent[] {
    // #region lab 5.1 SseDecoder.push
    const out: SseEvent[] = [];
    if (text === "") return out;
    let start = 0;
    if (this.afterCR && text.charCodeAt(0) === 0x0a) start = 1;
    this.afterCR = false;
    // Line breaks are found by indexOf (native, far faster than a loop over every character);
    // a text with no \r at all, the usual case, never looks for one again.
    let lf = text.indexOf("\n", start);
    let cr = text.indexOf("\r", start);
    while (lf !== -1 || cr !== -1) {
      const i = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
      let line = text.slice(start, i);
      if (this.lineParts.length > 0) {
        this.lineParts.push(line);
        line = this.lineParts.join("");
        this.lineParts = [];
      }
      this.line(line, out);
      start = i + 1;
      if (i === cr) {
        if (start === text.length) this.afterCR = true;
        else if (text.charCodeAt(start) === 0x0a) start++;
        cr = text.indexOf("\r", start);
      }
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
    }
    if (start < text.length) this.lineParts.push(text.slice(start));
    return out;
    // #endregion
  }

  /** The stream ended: delivers a last unterminated line and an unfinished frame, if any. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.lineParts.length > 0) {
      const line = this.lineParts.join("");
      this.lineParts = [];
      this.line(line, out);
    }
    this.line("", out);
    return out;
  }

  /** Handles one line (without its line break). */
  private line(line: string, out: SseEvent[]): void {
    // #region lab 5.1 SseDecoder.line
    if (line === "") {
      if (this.dataLines.length > 0) {
        const frame: SseEvent = { event: this.eventName || "message", data: this.dataLines.join("\n") };
        if (this.id !== undefined) frame.id = this.id;
        if (this.retry !== undefined) frame.retry = this.retry;
        out.push(frame);
      }
      this.eventName = "";
      this.dataLines = [];
      this.id = undefined;
      this.retry = undefined;
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return; // ": comment"
    if (line.startsWith("data:")) {
      // the common line first, without slicing out its field name
      this.dataLines.push(line.slice(line.charCodeAt(5) === 0x20 ? 6 : 5));
      return;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === "data") this.dataLines.push(value);
    else if (field === "event") this.eventName = value;
    else if (field === "id") this.id = value;
    else if (field === "retry" && /^[0-9]+$/.test(value)) this.retry = Number(value);
    // unknown fields (and a `retry:` that is not a number) are ignored
    // #endregion
  }
}

/**
 * Reads SSE frames from a byte stream (e.g. a `fetch` response body), one batch per read: the
 * frames that read completed, in order (a read that completes none yields nothing). Multi-byte
 * characters split across reads are decoded correctly. Stopping early (`break`) cancels the
 * stream. A failing read (reset, abort) rejects the iteration with that error.
 *
 * Batches are what an adapter wants: the frames of one read are handled in one synchronous
 * pass, so an async step is paid per read, not per frame (a stream of 4-character deltas has
 * thousands of frames per read).
 */
export async function* readSseBatches(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent[]> {
  // #region lab 5.1 readSseBatches
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  const sse = new SseDecoder();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const frames = sse.push(decoder.decode(value, { stream: true }));
      if (frames.length > 0) yield frames;
    }
    finished = true;
    const last = [...sse.push(decoder.decode()), ...sse.end()];
    if (last.length > 0) yield last;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
  // #endregion
}

/** `readSseBatches`, one frame at a time. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  for await (const frames of readSseBatches(body)) yield* frames;
}
