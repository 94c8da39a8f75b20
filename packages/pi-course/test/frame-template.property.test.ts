/**
 * FrameTemplate (src/models/http/frame-template.ts, given code in chapter 05): for any envelope,
 * any delta and any edit, a template reads exactly what JSON.parse gives, or refuses what it
 * refuses; hits return the learned object; sizes past what a regular expression or a backtracking
 * loop survives are read at once. Chapter 05's Lab 5.5 checks the adapter reads through it over
 * HTTP; these properties (thousands of generated frames) live here, outside the learner's
 * focused run, since the learner does not write this code.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { ChatCompletionsTurn } from "../src/index.js";
import { FrameTemplate, type FrameSlot } from "../src/models/http/frame-template.js";
import { RecordingStream } from "./support/model-turn.js";

const META = { provider: "test-provider", model: "test-model", timestamp: 1_700_000_000_000 };

it("FrameTemplate reads exactly what JSON.parse gives, for any envelope and any edit, in linear time", () => {
  // The template alone (frame-template.ts): exactly what JSON.parse gives, for any envelope and any edit.
  /** The same value with the same keys in the same order (`expect` only on a difference: these run by the thousand). */
  const same = (read: unknown, data: string) => {
    const expected = JSON.parse(data) as unknown;
    if (JSON.stringify(read) !== JSON.stringify(expected))
      expect(JSON.stringify(read), data).toBe(JSON.stringify(expected));
  };
  const contentSlot = (value: unknown): FrameSlot | undefined => {
    const delta = (value as { choices?: { delta?: Record<string, unknown> }[] } | null)?.choices?.[0]?.delta;
    return delta !== null && typeof delta === "object" && typeof delta.content === "string"
      ? { holder: delta, key: "content" }
      : undefined;
  };
  const strings = fc.oneof(
    fc.string({
      unit: fc.constantFrom("a", "é", "😀", '"', "\\", "\n", "\u0000", "\u001f", "\u2028", "/", "}", " ", ",", ":"),
    }),
    fc.string({ unit: "binary" }),
  );
  // Fields around the delta, before and after it, of any JSON value (strings with escapes, keys like "content").
  const fields = fc.dictionary(
    fc.oneof(fc.string(), fc.constantFrom("content", 'x"content', "id")),
    fc.jsonValue({ maxDepth: 2 }),
    { maxKeys: 3 },
  );
  const frameOf = (before: Record<string, unknown>, after: Record<string, unknown>) => (content: string) =>
    JSON.stringify({ ...before, choices: [{ index: 0, delta: { content }, finish_reason: null }], ...after });
  fc.assert(
    fc.property(fields, fields, fc.array(strings, { minLength: 2, maxLength: 6 }), (before, after, deltas) => {
      fc.pre(!("choices" in before) && !("choices" in after));
      const frame = frameOf(before, after);
      const bare = frame("");
      // Learned when the first "content":" of the frame is the delta's (not a key ending in it).
      const learnable = bare.indexOf('"content":"') === bare.indexOf('"choices":[{"index":0,"delta":{"content":"') + 31;
      const template = new FrameTemplate(contentSlot);
      let previous: unknown;
      deltas.forEach((delta, k) => {
        const data = frame(delta);
        const read = template.parse(data);
        same(read, data);
        if (k > 0 && (read === previous) !== learnable) expect(read === previous, data).toBe(learnable); // a hit returns the learned object
        previous = read;
      });
    }),
    { numRuns: 1500 },
  );
  // The adapter's own slots, through its turn: every delta kind, around envelopes as servers write them.
  const envelopes = fc.dictionary(
    fc.constantFrom("id", "object", "created", "model", "system_fingerprint", "usage"),
    fc.jsonValue({ maxDepth: 2 }),
    { maxKeys: 4 },
  );
  const chatDelta = fc.constantFrom(
    (s: string) => ({ content: s }),
    (s: string) => ({ reasoning_content: s, content: null }),
    (s: string) => ({ reasoning: s, channel: "analysis" }),
    (s: string) => ({ refusal: s }),
    (s: string) => ({ tool_calls: [{ index: 1, function: { arguments: s } }] }),
  );
  const nonEmpty = fc.array(
    strings.filter((s) => s !== ""),
    { minLength: 2, maxLength: 5 },
  );
  const expectHits = (template: { parse(data: string): unknown }, frames: string[]) => {
    const learned = template.parse(frames[0]!);
    same(learned, frames[0]!);
    for (const data of frames.slice(1)) {
      const read = template.parse(data);
      same(read, data);
      if (read !== learned) expect(read, data).toBe(learned);
    }
  };
  fc.assert(
    fc.property(envelopes, envelopes, chatDelta, nonEmpty, (before, after, delta, deltas) => {
      fc.pre(!("choices" in before) && !("choices" in after));
      const frame = (s: string) =>
        JSON.stringify({
          ...before,
          choices: [{ index: 0, delta: delta(s), logprobs: null, finish_reason: null }],
          ...after,
        });
      expectHits(new ChatCompletionsTurn(new RecordingStream(), META).frames, deltas.map(frame));
    }),
    { numRuns: 500 },
  );
  // A run of whitespace between tokens may change its length from frame to frame (servers pad or
  // indent): still the template, still JSON.parse's value.
  const indent = fc.constantFrom(1, 2, "\t", " \r\n");
  fc.assert(
    fc.property(
      envelopes,
      chatDelta,
      fc.array(
        fc.tuple(
          strings.filter((s) => s !== ""),
          indent,
        ),
        { minLength: 2, maxLength: 5 },
      ),
      (before, delta, frames) => {
        fc.pre(!("choices" in before));
        const frame = ([s, space]: [string, string | number]) =>
          JSON.stringify(
            { ...before, choices: [{ index: 0, delta: delta(s), logprobs: null, finish_reason: null }] },
            null,
            space,
          );
        expectHits(new ChatCompletionsTurn(new RecordingStream(), META).frames, frames.map(frame));
      },
    ),
    { numRuns: 300 },
  );
  // A run of a million spaces, in a frame that fits and in one that does not, after a compact and
  // after an indented frame: read at once (the expression does not backtrack over the run).
  const run = " ".repeat(1_000_000);
  const fits = frameOf({ id: "a" }, {})("b").replace("{", `{${run}`);
  for (const space of [0, 1]) {
    const spaced = new FrameTemplate(contentSlot);
    spaced.parse(JSON.stringify(JSON.parse(frameOf({ id: "a" }, {})("learned")), null, space));
    expect(spaced.parse(fits)).toEqual(JSON.parse(fits));
    expect(() => spaced.parse(`${fits.slice(0, -1)}${run}x}`)).toThrow(SyntaxError);
  }
  // After learning a frame, any edited frame: the same value as JSON.parse, or the same refusal.
  const edit = fc.record({
    at: fc.nat(),
    cut: fc.nat({ max: 3 }),
    insert: fc.string({
      unit: fc.constantFrom('"', "\\", "}", "0", "e", "u", "n", " ", ",", ":", "\n", "c"),
      maxLength: 4,
    }),
  });
  fc.assert(
    fc.property(fields, fields, strings, strings, edit, (before, after, first, second, { at, cut, insert }) => {
      fc.pre(!("choices" in before) && !("choices" in after));
      const frame = frameOf(before, after);
      const template = new FrameTemplate(contentSlot);
      template.parse(frame(first));
      const base = frame(second);
      const position = at % (base.length + 1);
      const data = base.slice(0, position) + insert + base.slice(position + cut);
      try {
        JSON.parse(data);
      } catch {
        expect(() => template.parse(data), data).toThrow(SyntaxError);
        return;
      }
      same(template.parse(data), data);
    }),
    { numRuns: 6000 },
  );
  // Near misses, after learning from a plain frame: each is read by JSON.parse, to its own value.
  const plain = frameOf({ id: "a" }, {});
  for (const data of [
    plain("x").replace('"content":"x"', '"content" : "x"'),
    plain("x").replace('{"id":"a"', '{"id":"b"'),
    plain("x").replace("null}]}", 'null}],"content":"y"}'),
    plain("x").replace('"id":"a"', '"x\\"content":"x"'),
    plain("x").replace('"content":"x"', '"content":"x","content":"y"'),
    plain("x") + " ",
    '{"choices":[]}',
    "[]",
  ]) {
    const template = new FrameTemplate(contentSlot);
    template.parse(plain("learned"));
    same(template.parse(data), data);
  }
  // A key that ends in "content" before the delta's: its value is not the delta, and is read as it changes.
  const fake = (value: string, content: string) => frameOf({ 'x"content': value }, {})(content);
  const tricked = new FrameTemplate(contentSlot);
  for (const data of [fake("a", "a"), fake("b", "a"), fake("c", "a"), fake("c", "d")]) same(tricked.parse(data), data);
  // A slot whose key text also ends another string (here a value ":"): no template, no error.
  const colon = new FrameTemplate((value) =>
    typeof (value as Record<string, unknown>)[":"] === "string"
      ? { holder: value as Record<string, unknown>, key: ":" }
      : undefined,
  );
  for (const data of ['{"k":":",":":"z"}', '{"k":":",":":"y"}']) same(colon.parse(data), data);
  // Sizes: an envelope of 40,000 characters (past what a regular expression may hold) and a
  // delta of 9 million characters (past what a backtracking loop per character survives).
  const wide = frameOf({ pad: "r".repeat(40_000) }, {});
  const huge = "a".repeat(9_000_000);
  for (const frames of [
    [wide("a"), wide("b"), '{"choices":[]}', wide("c")],
    [plain(huge), plain("b"), plain(huge), plain("c\\n" + huge)],
  ]) {
    const template = new FrameTemplate(contentSlot);
    for (const data of frames) expect(template.parse(data)).toEqual(JSON.parse(data));
  }
  // Block after block of ten frames (a new envelope each time): each block's template pays, and learning goes on.
  const blocks = new FrameTemplate(contentSlot);
  for (let block = 0; block < 20; block++) {
    const frame = frameOf({ id: `chatcmpl-${block}` }, {});
    const learned = blocks.parse(frame("a"));
    for (let k = 1; k < 10; k++) expect(blocks.parse(frame(String(k)))).toBe(learned);
  }
  // Streams where templates do not pay: frames that all differ around the delta (OpenAI's
  // obfuscation padding), two envelopes taking turns in pairs, a "content" before the delta's
  // (no template can be learned), that one after a long block that paid. Every frame is read;
  // the slot is asked for a bounded number of times (a handful of tries), not once per frame.
  const decoy = (k: number) => frameOf({ meta: { content: "fixed" } }, {})(String(k));
  const streams: ((k: number) => string)[] = [
    (k) => frameOf({}, { obfuscation: "x".repeat(k) })(String(k)),
    (k) => frameOf({}, { id: (k >> 1) % 2 })(String(k)),
    decoy,
    (k) => (k < 20 ? plain(String(k)) : decoy(k)),
  ];
  for (const stream of streams) {
    let asked = 0;
    const template = new FrameTemplate((value) => (asked++, contentSlot(value)));
    for (let k = 0; k < 200; k++) {
      const data = stream(k);
      same(template.parse(data), data);
    }
    expect(asked).toBeLessThan(20);
  }
}, 60_000);
