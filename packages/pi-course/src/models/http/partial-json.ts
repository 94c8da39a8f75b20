/**
 * Incremental parsing of JSON text that arrives in pieces: streamed tool-call arguments.
 *
 * `PartialJsonParser.push(piece)` reads each character once, so a whole stream costs time
 * linear in its length. `value` is the best-effort value of the text read so far, kept as a
 * **live view**: the parser builds the value in place (strings are re-assigned as they grow,
 * containers gain members), so reading it after every piece costs nothing. Like an event's
 * `partial`, the same objects keep changing with later pieces: read it, don't keep it
 * (`structuredClone` it to keep a copy). Never execute it: the finished text is parsed once,
 * strictly, by `parseToolArguments`.
 *
 * What an incomplete text shows:
 * - an open string shows the characters read so far (an escape shows once it is complete);
 * - an open container shows the members and elements read so far;
 * - a member shows once its key is complete and its value has started;
 * - an open number shows once its digits form a number; `true`/`false`/`null` once complete.
 *
 * Text that cannot be JSON (a stray character, a missing comma) stops the parser: `failed`
 * becomes true and `value` keeps what it showed before. Text after the root value is ignored.
 *
 * Longer than the house's ~400 lines on purpose: `PartialJsonParser` is one state machine whose
 * hot loop reads private fields and constants shared by every state; split across files, one
 * loop would be read in several places. `parseToolArguments` (the strict final parse) closes it.
 */

import { GrowingText } from "./growing-text.js";

type Container = Record<string, unknown> | unknown[];

/** What an open container expects next. */
type Phase = "key" | "colon" | "value" | "comma";

interface Frame {
  container: Container;
  isArray: boolean;
  phase: Phase;
  /** The key of the member being read (objects only). */
  key: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Where the open value goes. */
const SLOT_ROOT = 0;
const SLOT_MEMBER = 1;
const SLOT_ELEMENT = 2;
const SLOT_PROTO = 3;

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

export class PartialJsonParser {
  private root: unknown = undefined;
  private stack: Frame[] = [];
  /** Inside a string, and whether it is a key or a value (its text is in `text`). */
  private inString = false;
  private stringIsKey = false;
  /** The open string's decoded text so far. */
  private text = "";
  /** `text` as it grows by pieces (see `addText`). */
  private readonly growing = new GrowingText();
  /** A started escape (`\`, `\u12`…) held back until complete. */
  private escape = "";
  /** A number or literal being read. */
  private scalar = "";
  /** Where the open string or scalar goes: a container (or none for the root) and a slot. */
  private slotKind = SLOT_ROOT;
  private slotContainer: Container | undefined = undefined;
  private slotKey: string | number = 0;
  private rootDone = false;
  private broken = false;

  /** The best-effort value so far (a live view; see the module comment). */
  get value(): unknown {
    return this.root;
  }

  /** True once the text cannot be JSON; `value` then stays as it was. */
  get failed(): boolean {
    return this.broken;
  }

  /** Reads the next piece of text. Cost: linear in `piece.length` (amortised O(1) per char). */
  push(piece: string): void {
    // #region lab 5.2 PartialJsonParser.push
    let i = 0;
    const n = piece.length;
    while (i < n && !this.broken && !this.rootDone) {
      if (this.inString) {
        i = this.readString(piece, i);
        continue;
      }
      if (this.scalar !== "") {
        i = this.readScalar(piece, i);
        continue;
      }
      this.structural(piece.charCodeAt(i), piece[i]!);
      i++;
    }
    // An open number shows its value as soon as its digits form one.
    if (this.scalar !== "" && !this.broken) {
      const shown = pendingScalar(this.scalar);
      if (shown !== undefined) this.place(shown);
    }
    // #endregion
  }

  /**
   * Reads string characters from `start`; returns the index after what it consumed. The decoded
   * characters of the piece are gathered first, so an open value is re-placed once per piece.
   */
  private readString(piece: string, start: number): number {
    // #region lab 5.2 PartialJsonParser.readString
    const n = piece.length;
    let i = start;
    if (this.escape !== "") {
      i = this.continueEscape(piece, start); // an escape the previous piece cut off
      if (this.broken) return n;
    }
    let run = i;
    let decoded = "";
    for (; i < n; i++) {
      const code = piece.charCodeAt(i);
      if (code >= 0x20 && code !== QUOTE && code !== BACKSLASH) continue;
      if (i > run) decoded += piece.slice(run, i);
      if (code === QUOTE) {
        this.addText(decoded);
        this.endString();
        return i + 1;
      }
      if (code !== BACKSLASH) {
        this.addText(decoded);
        this.show();
        return this.fail(piece); // a raw control character
      }
      const simple = i + 1 < n ? simpleEscape(piece.charCodeAt(i + 1)) : undefined;
      if (simple !== undefined) {
        decoded += simple;
        i++; // the escape's letter
        run = i + 1;
        continue;
      }
      // `\u…`, a bad escape, or one cut off by the end of the piece: the stateful path.
      this.addText(decoded);
      decoded = "";
      this.escape = "\\";
      i = this.continueEscape(piece, i + 1);
      if (this.broken) {
        this.show();
        return n;
      }
      run = i;
      i--; // the loop's i++ brings i back to `run`
    }
    this.addText(run === 0 ? piece : decoded + piece.slice(run)); // run === 0: all plain, no copy
    this.show();
    return n;
    // #endregion
  }

  /** Continues an escape at `start`; returns the index after the characters it took. */
  private continueEscape(piece: string, start: number): number {
    // #region lab 5.2 PartialJsonParser.continueEscape
    let i = start;
    while (i < piece.length && this.escape !== "") {
      const code = piece.charCodeAt(i);
      if (this.escape === "\\") {
        const simple = simpleEscape(code);
        if (simple !== undefined) {
          this.escape = "";
          this.addText(simple);
        } else if (code === 0x75 /* u */) {
          this.escape = "\\u";
        } else {
          return this.fail(piece);
        }
      } else {
        if (!isHexDigit(code)) return this.fail(piece);
        this.escape += piece[i];
        if (this.escape.length === 6) {
          this.addText(String.fromCharCode(Number.parseInt(this.escape.slice(2), 16)));
          this.escape = "";
        }
      }
      i++;
    }
    return i;
    // #endregion
  }

  /** Places the open string value as read so far (keys are not placed). */
  private show(): void {
    if (!this.stringIsKey) this.place(this.text);
  }

  /** Adds decoded characters to the open string (placing it is the caller's job). */
  private addText(decoded: string): void {
    // grown in flat blocks (growing-text.ts); `text` set by other code starts it over
    if (this.text !== this.growing.text) this.growing.reset(this.text);
    this.text = this.growing.add(decoded);
  }

  private endString(): void {
    // #region lab 5.2 PartialJsonParser.endString
    this.inString = false;
    const frame = this.stack[this.stack.length - 1];
    if (this.stringIsKey) {
      frame!.key = this.text;
      frame!.phase = "colon";
    } else {
      this.place(this.text);
      this.valueEnded(frame);
    }
    this.text = "";
    // #endregion
  }

  /** Reads number/literal characters up to a delimiter; returns the delimiter's index. */
  private readScalar(piece: string, start: number): number {
    // #region lab 5.2 PartialJsonParser.readScalar
    let i = start;
    while (i < piece.length && !isDelimiter(piece.charCodeAt(i))) i++;
    this.scalar += piece.slice(start, i);
    if (i < piece.length) {
      const value = finalScalar(this.scalar);
      this.scalar = "";
      if (value === undefined) return this.fail(piece);
      this.place(value);
      this.valueEnded(this.stack[this.stack.length - 1]);
    }
    return i;
    // #endregion
  }

  /** One character outside strings and scalars. */
  private structural(code: number, ch: string): void {
    // #region lab 5.2 PartialJsonParser.structural
    if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) return;
    const frame = this.stack[this.stack.length - 1];
    if (frame === undefined) {
      if (this.root !== undefined) return void this.fail("");
      return this.startValue(code, ch, undefined);
    }
    switch (frame.phase) {
      case "key":
        if (code === QUOTE) {
          this.inString = true;
          this.stringIsKey = true;
          this.text = "";
          return;
        }
        if (code === 0x7d && Object.keys(frame.container).length === 0) return this.close();
        return void this.fail("");
      case "colon":
        if (code === 0x3a) {
          frame.phase = "value";
          return;
        }
        return void this.fail("");
      case "value":
        if (code === 0x5d && frame.isArray && (frame.container as unknown[]).length === 0) {
          return this.close();
        }
        return this.startValue(code, ch, frame);
      case "comma":
        if (code === 0x2c) {
          frame.phase = frame.isArray ? "value" : "key";
          return;
        }
        if (code === (frame.isArray ? 0x5d : 0x7d)) return this.close();
        return void this.fail("");
    }
    // #endregion
  }

  /** A value starts with `ch` in `frame` (or at the root). */
  private startValue(code: number, ch: string, frame: Frame | undefined): void {
    // #region lab 5.2 PartialJsonParser.startValue
    if (frame === undefined) {
      this.slotKind = SLOT_ROOT;
      this.slotContainer = undefined;
    } else {
      this.slotContainer = frame.container;
      if (frame.isArray) {
        this.slotKind = SLOT_ELEMENT;
        this.slotKey = (frame.container as unknown[]).length;
      } else {
        this.slotKind = frame.key === "__proto__" ? SLOT_PROTO : SLOT_MEMBER;
        this.slotKey = frame.key;
      }
    }
    if (code === QUOTE) {
      this.inString = true;
      this.stringIsKey = false;
      this.text = "";
      this.place("");
      return;
    }
    if (code === 0x7b || code === 0x5b) {
      const isArray = code === 0x5b;
      const container: Container = isArray ? [] : {};
      this.place(container);
      this.stack.push({ container, isArray, phase: isArray ? "value" : "key", key: "" });
      return;
    }
    if (code === 0x2d || (code >= 0x30 && code <= 0x39) || ch === "t" || ch === "f" || ch === "n") {
      this.scalar = ch;
      return;
    }
    this.fail("");
    // #endregion
  }

  private close(): void {
    this.stack.pop();
    this.valueEnded(this.stack[this.stack.length - 1]);
  }

  private valueEnded(frame: Frame | undefined): void {
    if (frame === undefined) this.rootDone = true;
    else frame.phase = "comma";
  }

  /** Sets the open value's slot. O(1). */
  private place(value: unknown): void {
    switch (this.slotKind) {
      case SLOT_MEMBER:
        (this.slotContainer as Record<string, unknown>)[this.slotKey as string] = value;
        return;
      case SLOT_ROOT:
        this.root = value;
        return;
      case SLOT_ELEMENT:
        (this.slotContainer as unknown[])[this.slotKey as number] = value;
        return;
      default:
        // `__proto__` must become an own member, as with JSON.parse, not the prototype.
        Object.defineProperty(this.slotContainer, "__proto__", {
          value,
          writable: true,
          enumerable: true,
          configurable: true,
        });
    }
  }

  private fail(piece: string): number {
    this.broken = true;
    return piece.length;
  }
}

/** The character a one-letter escape (`\n`, `\"`…) stands for, by the letter's code. */
function simpleEscape(code: number): string | undefined {
  switch (code) {
    case QUOTE:
      return '"';
    case BACKSLASH:
      return "\\";
    case 0x2f:
      return "/";
    case 0x62:
      return "\b";
    case 0x66:
      return "\f";
    case 0x6e:
      return "\n";
    case 0x72:
      return "\r";
    case 0x74:
      return "\t";
    default:
      return undefined;
  }
}

function isHexDigit(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

function isDelimiter(code: number): boolean {
  return (
    code === 0x20 ||
    code === 0x0a ||
    code === 0x0d ||
    code === 0x09 ||
    code === 0x2c ||
    code === 0x7d ||
    code === 0x5d ||
    code === 0x3a ||
    code === QUOTE
  );
}

/** The value of a finished number or literal token, or `undefined` when it is neither. */
function finalScalar(token: string): unknown {
  if (token === "true") return true;
  if (token === "false") return false;
  if (token === "null") return null;
  return NUMBER.test(token) ? Number(token) : undefined;
}

/** What an unfinished token shows: complete literals and numbers only. */
function pendingScalar(token: string): unknown {
  if (token.length > 64) return undefined;
  const value = finalScalar(token);
  if (value !== undefined) return value;
  const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?/.exec(token);
  return number === null ? undefined : Number(number[0]);
}

/** The outcome of the one strict parse of a tool call's finished argument text. */
export interface ParsedToolArguments {
  /** The parsed object; `{}` when the text was empty or malformed. */
  arguments: Record<string, unknown>;
  /** Set when the text is not a JSON object: a message the model can read. */
  error?: string;
}

/**
 * Parses a tool call's finished argument text, strictly. Empty text means no arguments (`{}`);
 * anything that is not a JSON object is an error, worded for the model to correct itself.
 */
export function parseToolArguments(raw: string): ParsedToolArguments {
  // #region lab 5.2 parseToolArguments
  if (raw.trim() === "") return { arguments: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      arguments: {},
      error:
        `The tool call was not run: its arguments are not valid JSON (${reason}). ` +
        `Send the call again with the arguments as one complete JSON object.`,
    };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    const kind = parsed === null ? "null" : Array.isArray(parsed) ? "an array" : typeof parsed;
    return {
      arguments: {},
      error:
        `The tool call was not run: its arguments must be a JSON object, got ${kind}. ` +
        `Send the call again with the arguments as one JSON object.`,
    };
  }
  return { arguments: parsed as Record<string, unknown> };
  // #endregion
}
