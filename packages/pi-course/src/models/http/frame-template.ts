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
 * before the delta's string literal and the text after it. A later frame that is that prefix,
 * one valid string literal and that suffix (a run of whitespace between tokens may have another
 * length: some servers pad frames) is read by one regular expression, and only the literal is
 * decoded (by `JSON.parse` of the literal alone, when it has escapes).
 *
 * Why the result is exactly `JSON.parse`'s: the literal is found as the first `"<key>":"` of the
 * frame (spaces allowed around the colon), which for a key that starts with a letter always ends
 * with the opening quote of a string value, so the literal is one string token of the frame.
 * Swapping one string token of valid JSON for another, or changing a run of whitespace between
 * tokens, keeps it valid and changes that string's value only, wherever that string sits. A
 * probe makes sure it sits at the slot: the frame with `x` appended to that literal must have `x`
 * appended to the slot (one more `JSON.parse`, once per template).
 *
 * Cost: a template pays for itself after a few frames (see `PAYS_AFTER`). Frames whose other
 * fields change every time (OpenAI's `obfuscation` padding), envelopes that take turns, or
 * frames where no template can be learned soon leave the stream to `JSON.parse` alone.
 *
 * Every object `parse` returns may be the learned one, which the next matching frame overwrites:
 * read it before the next `parse`, keep no object from it (strings are safe), never change it.
 */

/**
 * Where, in a parsed frame, the delta string lives: `holder[key]` is a string, and `key` starts
 * with a letter. A `slotOf` finds the place by the frame's structure and key names; a frame that
 * differs only in that string (still non-empty) has its slot at the same place.
 */
export type FrameSlot = { holder: Record<string, unknown>; key: string };

/**
 * Learning a template costs about eight `JSON.parse` of the frame (the probe, a regular
 * expression to compile); a match of a delta of a few characters, as streams send them, costs a
 * fifth to a tenth of one (a delta of kilobytes up to two: the expression checks the literal,
 * then `JSON.parse` decodes it if it has escapes). A template that read fewer than `PAYS_AFTER`
 * frames before the next frame had to be learned did not pay; after `GIVE_UP_AFTER` tries in a
 * row without one that paid, the stream is left to `JSON.parse`.
 */
const PAYS_AFTER = 8;
const GIVE_UP_AFTER = 8;
/** Frames with more text than this around the delta are not learned (regular expressions have a size limit). */
const MAX_ENVELOPE = 4096;

/**
 * The body of a JSON string literal (no raw quote, backslash or control character; valid escapes),
 * unrolled so that a long body does not backtrack per character.
 */
const STRING_BODY = String.raw`([^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*)`;
/** The body of a string literal of text `JSON.parse` accepted, from `lastIndex`. */
const LITERAL_BODY = /[^"\\]*(?:\\[^][^"\\]*)*/y;

export class FrameTemplate {
  private pattern: RegExp | undefined = undefined;
  /** The object learned with `pattern`, and its slot. */
  private learned: { value: unknown; slot: FrameSlot } | undefined = undefined;
  /** Frames read by `pattern`. */
  private matches = 0;
  /** Tries to learn since a template last paid for itself. */
  private tries = 0;

  constructor(private readonly slotOf: (value: unknown) => FrameSlot | undefined) {}

  /** `JSON.parse(data)`, or the learned object with its slot set, when `data` fits the template. */
  parse(data: string): unknown {
    const match = this.pattern?.exec(data);
    if (match) {
      const body = match[1]!;
      const { value, slot } = this.learned!;
      slot.holder[slot.key] = body.includes("\\") ? (JSON.parse(`"${body}"`) as string) : body;
      this.matches++;
      return value;
    }
    const value: unknown = JSON.parse(data);
    if (this.tries < GIVE_UP_AFTER) this.learn(data, value);
    return value;
  }

  private learn(data: string, value: unknown): void {
    const slot = this.slotOf(value);
    if (slot === undefined) return; // another kind of frame: the template stays for the next delta
    if (this.matches >= PAYS_AFTER) this.tries = this.matches = 0; // the template in use paid: start counting again
    if (++this.tries >= GIVE_UP_AFTER) {
      this.pattern = this.learned = undefined;
      return;
    }
    const pattern = this.patternOf(data, slot);
    if (pattern === undefined) return;
    this.pattern = pattern;
    this.learned = { value, slot };
    this.matches = 0;
  }

  /** The template of `data` around `slot`, if the literal after the first `"<key>" : "` is the slot's. */
  private patternOf(data: string, slot: FrameSlot): RegExp | undefined {
    const needle = new RegExp(`"${escapeRegExp(slot.key)}"${SPACE}:${SPACE}"`).exec(data);
    if (needle === null) return undefined;
    const start = needle.index + needle[0].length;
    LITERAL_BODY.lastIndex = start;
    LITERAL_BODY.exec(data);
    const end = LITERAL_BODY.lastIndex;
    if (data.length - (end - start) > MAX_ENVELOPE) return undefined;
    const prefix = data.slice(0, start);
    const suffix = data.slice(end);
    let probe: FrameSlot | undefined;
    try {
      probe = this.slotOf(JSON.parse(`${prefix}${data.slice(start, end)}x${suffix}`));
    } catch {
      return undefined; // not a string value after all (a key this code was not meant for)
    }
    if (probe?.key !== slot.key || probe.holder[probe.key] !== `${slot.holder[slot.key] as string}x`) return undefined;
    // The prefix ends with the literal's opening quote, the suffix starts with its closing one.
    return new RegExp(`^${envelope(prefix.slice(0, -1))}"${STRING_BODY}"${envelope(suffix.slice(1))}$`);
  }
}

/** JSON's insignificant whitespace. */
const SPACE = "[ \\t\\n\\r]*";
/** A frame's text outside the delta in pieces: a whole string, a run of whitespace, or the rest. */
const PIECES = /"(?:[^"\\]|\\[^])*"|[ \t\n\r]+|[^" \t\n\r]+/g;

/**
 * Text of a frame (starting outside any string) as a regular expression in which each run of
 * whitespace between tokens stands for any run, even none: JSON ignores it, and some servers pad
 * their frames with a varying run (Anthropic ends each delta with spaces). Two runs are never side
 * by side, so a long run of spaces cannot make the expression backtrack.
 */
function envelope(text: string): string {
  return text.replace(PIECES, (piece) => (/^[ \t\n\r]/.test(piece) ? SPACE : escapeRegExp(piece)));
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
}
