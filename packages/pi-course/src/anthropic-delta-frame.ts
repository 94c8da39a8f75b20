/**
 * The hot frames of an Anthropic stream, read without the generic JSON parser.
 *
 * Nearly every frame of a long answer, a long thinking block or a long tool call is one delta,
 * which the API always writes the same way, e.g.
 *
 *     {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}
 *
 * `JSON.parse` of such a frame was the largest single cost of a streamed tool call (profiled on
 * the 2 MB call of `bench/05`), more than everything the adapter does with the delta.
 * `readDeltaFrame` recognises exactly that text: the fixed start, the index as JSON writes a
 * non-negative integer, one of the three delta kinds below, one string, and `"}}` at the very end.
 * For such a frame it returns what `JSON.parse` returns (the same keys in the same order). Any
 * other text (another key order, spaces, another delta type, a number with a sign, a fraction
 * or a leading zero, a raw quote or control character in the string) returns `undefined`, and
 * the caller parses the frame with `JSON.parse`, which also reports a malformed one.
 *
 * A string with escapes (`\"`, `\n`, `\u00e9`…) is decoded by `JSON.parse` of that string
 * alone: when it is a complete JSON string literal on its own, the frame around it can only
 * mean the object above. Exactness is tested as a property: for every frame this function
 * accepts, its result deep-equals `JSON.parse` of the frame.
 */
import type { AnthropicStreamEvent } from "./anthropic-wire.js";

const START = '{"type":"content_block_delta","index":';
const END = '"}}';

/** What lies between the index and the string's first character, per delta kind. */
const ARGUMENTS = ',"delta":{"type":"input_json_delta","partial_json":"';
const TEXT = ',"delta":{"type":"text_delta","text":"';
const THINKING = ',"delta":{"type":"thinking_delta","thinking":"';

/** The event `JSON.parse(data)` would give, for a frame of the usual delta shape; else `undefined`. */
export function readDeltaFrame(data: string): AnthropicStreamEvent | undefined {
  if (!data.startsWith(START) || !data.endsWith(END)) return undefined;
  const digits = START.length;
  let at = digits;
  while (at - digits < 10 && isDigit(data.charCodeAt(at))) at++;
  const length = at - digits;
  // JSON writes 0 as "0" and no other integer with a leading zero; 10 digits or more: leave it to JSON.parse.
  if (length === 0 || length === 10 || (length > 1 && data.charCodeAt(digits) === 0x30)) return undefined;
  const index = length === 1 ? data.charCodeAt(digits) - 0x30 : Number(data.slice(digits, at));
  const end = data.length - END.length;
  if (data.startsWith(ARGUMENTS, at)) {
    const value = stringAt(data, at + ARGUMENTS.length, end);
    return value === undefined ? undefined : { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: value } };
  }
  if (data.startsWith(TEXT, at)) {
    const value = stringAt(data, at + TEXT.length, end);
    return value === undefined ? undefined : { type: "content_block_delta", index, delta: { type: "text_delta", text: value } };
  }
  if (data.startsWith(THINKING, at)) {
    const value = stringAt(data, at + THINKING.length, end);
    return value === undefined ? undefined : { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: value } };
  }
  return undefined;
}

/** The string whose characters are `data[start, end)`, if they are one JSON string's content. */
function stringAt(data: string, start: number, end: number): string | undefined {
  if (end < start) return undefined;
  for (let i = start; i < end; i++) {
    const code = data.charCodeAt(i);
    if (code === 0x5c) {
      // An escape: decode the literal as a whole. If it is not one complete literal (a raw quote
      // inside, an escape cut by the end), JSON.parse throws and the caller parses the frame.
      try {
        return JSON.parse(data.slice(start - 1, end + 1)) as string;
      } catch {
        return undefined;
      }
    }
    if (code === 0x22 || code < 0x20) return undefined;
  }
  return data.slice(start, end);
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}
