/**
 * `GrowingText` (the fast path under the partial-JSON parser and the provider turn's fields)
 * against plain `+=`: for any pieces, and starts over at any point, the text is the same.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FOLD_AT, GrowingText } from "../src/models/http/growing-text.js";

describe("GrowingText", () => {
  it("holds what += would, for any pieces and any starts over", () => {
    const step = fc.oneof(
      fc.string({ maxLength: FOLD_AT * 2 }).map((piece) => ({ piece })),
      fc.string({ maxLength: 20 }).map((reset) => ({ reset })),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const growing = new GrowingText();
        let plain = "";
        for (const s of steps) {
          if ("reset" in s) {
            growing.reset(s.reset);
            plain = s.reset;
          } else {
            plain += s.piece;
            expect(growing.add(s.piece)).toBe(plain);
          }
          expect(growing.text).toBe(plain);
        }
      }),
      { numRuns: 300 },
    );
  });
});
