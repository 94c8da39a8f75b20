import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { settle } from "../src/agent/settle.js";
import type { Settled } from "../src/agent/settle.js";
import { plainSettle } from "./support/settle-plain.js";

/** What one piece of work does: give or throw at once, or settle a promise after `ms` (or never). */
type Work = { kind: "give" | "throw" } | { kind: "resolve" | "reject"; ms: number } | { kind: "never" };

const work = fc.oneof(
  fc.record({ kind: fc.constantFrom("give" as const, "throw" as const) }),
  fc.record({ kind: fc.constantFrom("resolve" as const, "reject" as const), ms: fc.constantFrom(0, 1, 3, 5) }),
  fc.constant({ kind: "never" as const }),
);

function run(w: Work, i: number): () => unknown {
  return () => {
    if (w.kind === "give") return i;
    if (w.kind === "throw") throw i;
    if (w.kind === "never") return new Promise(() => {});
    const { kind } = w;
    const ms = "ms" in w ? w.ms : 0;
    return new Promise((ok, fail) => setTimeout(() => (kind === "reject" ? fail(i) : ok(i)), ms));
  };
}

/**
 * Plays the same waits (on one signal, aborted at `abortAt` ms) with one `settle`, on fake timers
 * advanced past every deadline: the same schedule for both versions, whatever the machine's load.
 */
async function play(
  impl: typeof settle,
  works: Work[],
  abortAt: number | "before",
  timeoutMs: number | undefined,
): Promise<Settled<unknown>[]> {
  const controller = new AbortController();
  if (abortAt === "before") controller.abort();
  else setTimeout(() => controller.abort(), abortAt);
  const all = Promise.all(works.map((w, i) => impl(run(w, i), controller.signal, timeoutMs)));
  await vi.advanceTimersByTimeAsync(20);
  return all;
}

describe("settle", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("the waiter list and the plain version (one listener per wait) settle every wait alike", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(work, { minLength: 1, maxLength: 12 }),
        fc.constantFrom<number | "before">("before", 0, 2, 4, 9),
        fc.option(fc.constantFrom(3, 7), { nil: undefined }),
        async (works, abortAt, timeoutMs) => {
          const fast = await play(settle, works, abortAt, timeoutMs);
          const plain = await play(plainSettle, works, abortAt, timeoutMs);
          expect(fast).toEqual(plain);
        },
      ),
      { numRuns: 300 },
    );
  });
});
