/**
 * `FrameTemplate`: the repeated frames of a stream, read without the generic JSON parser.
 *
 * A long answer, thinking block or tool call arrives as thousands of frames that are the same
 * text but for one string, the delta. A Chat Completions server writes, for example,
 *
 *     {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}
 *     {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"}}]}
 *
 * and `JSON.parse` of every such frame was the largest single cost of a streamed answer
 * (profiled on `bench/05`). A template is learned from one frame that `JSON.parse` read: the text
 * before the delta's string literal and the text after it. A later frame that is exactly that
 * prefix, one valid string literal and that suffix is read by one regular expression, and only
 * the literal is decoded (by `JSON.parse` of the literal alone, when it has escapes). The value is
 * what `JSON.parse` would give: JSON's grammar is context-free, so swapping one string token for
 * another changes that string and nothing else.
 *
 * Which string is the delta is the caller's `slotOf` (e.g. `choices[0].delta.content`). The
 * literal is found as the first `"<key>":"` of the frame (in JSON text that always opens a string
 * value) and checked to be the slot's: the frame with that literal changed must have the slot
 * changed the same way (one more `JSON.parse`, once per template). Frames whose other fields
 * change every time (OpenAI's `obfuscation` padding) never match; a stream where templates do
 * not pay for themselves is soon left to `JSON.parse` alone (see `PAYS_AFTER`), so it pays for
 * a few extra checks only.
 *
 * The value returned for a matching frame is the learned object with its slot set to the new
 * string: it is valid until the next `parse`. Callers read it and keep no reference to it.
 */
/** Where, in a parsed frame, the delta string lives (`holder[key]` is a string). */
export type FrameSlot = { holder: Record<string, unknown>; key: string };

/**
 * Learning a template costs about as much as `JSON.parse` of eight frames (a second parse and a
 * regular expression to compile), a match an eighth of one. A template that read fewer than
 * `PAYS_AFTER` frames before the next was learned did not pay for itself; after `GIVE_UP_AFTER`
 * such templates in a row (two envelopes taking turns, a field that changes every frame), the
 * stream is left to `JSON.parse`.
 */
const PAYS_AFTER = 8;
const GIVE_UP_AFTER = 8;

/** The body of a JSON string literal: no raw quote, backslash or control character; valid escapes. */
const STRING_BODY = String.raw`((?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*)`;
/** The body of a string literal, from a position (only used on text `JSON.parse` accepted). */
const LITERAL_BODY = /(?:[^"\\]|\\.)*/y;

export class FrameTemplate {
  private pattern: RegExp | undefined = undefined;
  private parsed: unknown = undefined;
  private slot: FrameSlot | undefined = undefined;
  /** Frames the current template has read. */
  private matches = 0;
  /** Templates in a row that did not pay for themselves. */
  private idle = 0;

  constructor(private readonly slotOf: (value: unknown) => FrameSlot | undefined) {}

  /** `JSON.parse(data)`, or the learned object with its slot set, when `data` fits the template. */
  parse(data: string): unknown {
    const pattern = this.pattern;
    if (pattern !== undefined) {
      const match = pattern.exec(data);
      if (match !== null) {
        const body = match[1]!;
        this.slot!.holder[this.slot!.key] = body.includes("\\") ? (JSON.parse(`"${body}"`) as string) : body;
        this.matches++;
        return this.parsed;
      }
    }
    const value: unknown = JSON.parse(data);
    if (this.idle < GIVE_UP_AFTER) this.learn(data, value);
    return value;
  }

  private learn(data: string, value: unknown): void {
    const slot = this.slotOf(value);
    if (slot === undefined) return; // another kind of frame: keep the template for the next delta
    const needle = `"${slot.key}":"`;
    const at = data.indexOf(needle);
    if (at === -1) return;
    const start = at + needle.length;
    LITERAL_BODY.lastIndex = start;
    LITERAL_BODY.exec(data);
    const end = LITERAL_BODY.lastIndex;
    const prefix = data.slice(0, start);
    const suffix = data.slice(end);
    // The literal found is some string of the frame; it is the slot's if changing it changes the slot.
    const changed = `${slot.holder[slot.key] as string}x`;
    const probe = this.slotOf(JSON.parse(`${prefix}${data.slice(start, end)}x${suffix}`));
    if (probe?.key !== slot.key || probe.holder[probe.key] !== changed) return;
    this.idle = this.pattern !== undefined && this.matches < PAYS_AFTER ? this.idle + 1 : 0;
    if (this.idle >= GIVE_UP_AFTER) {
      this.pattern = undefined;
      return;
    }
    this.pattern = new RegExp(`^${escape(prefix)}${STRING_BODY}${escape(suffix)}$`);
    this.parsed = value;
    this.slot = slot;
    this.matches = 0;
  }
}

function escape(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}
