/**
 * Random transcripts for chapter 11's property tests: user prompts, text turns, tool batches
 * (one call or several in parallel, results in source or another order, some of them errors),
 * error and aborted turns (their calls never answered), length turns (every call answered with
 * an error), custom messages, random usage, and (when built into a session) compactions.
 */
import fc from "fast-check";
import { compact } from "../../src/session/compaction.js";
import type { AgentMessage } from "../../src/types.js";
import type { Model } from "../../src/model.js";
import { MemorySession, assistant, call, chars, note, result, user } from "./session-memory.js";

export type Step =
  | { kind: "user"; size: number }
  | { kind: "note"; size: number }
  | { kind: "text"; size: number; usage: number }
  | { kind: "tools"; calls: { size: number; resultSize: number; isError: boolean }[]; reversed: boolean; usage: number }
  | { kind: "failed"; stopReason: "error" | "aborted"; calls: number; size: number }
  | { kind: "length"; calls: number }
  | { kind: "compact"; keepRecentTokens: number };

const size = fc.nat({ max: 600 });
const usage = fc.oneof(fc.constant(0), fc.nat({ max: 5_000 }));

export const stepArbitrary = (withCompactions: boolean): fc.Arbitrary<Step> =>
  fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant("user" as const), size }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant("note" as const), size }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant("text" as const), size, usage }), weight: 2 },
    {
      arbitrary: fc.record({
        kind: fc.constant("tools" as const),
        calls: fc.array(fc.record({ size: fc.nat({ max: 200 }), resultSize: size, isError: fc.boolean() }), {
          minLength: 1,
          maxLength: 4,
        }),
        reversed: fc.boolean(),
        usage,
      }),
      weight: 4,
    },
    {
      arbitrary: fc.record({
        kind: fc.constant("failed" as const),
        stopReason: fc.constantFrom("error" as const, "aborted" as const),
        calls: fc.nat({ max: 2 }),
        size,
      }),
      weight: 1,
    },
    {
      arbitrary: fc.record({ kind: fc.constant("length" as const), calls: fc.integer({ min: 1, max: 2 }) }),
      weight: 1,
    },
    {
      arbitrary: fc.record({ kind: fc.constant("compact" as const), keepRecentTokens: fc.nat({ max: 800 }) }),
      weight: withCompactions ? 3 : 0,
    },
  );

/** The messages of one step (none for `compact`). `n` makes call ids unique. */
export function messagesOf(step: Step, n: number): AgentMessage[] {
  switch (step.kind) {
    case "user":
      return [user(chars(step.size, "u"))];
    case "note":
      return [note(chars(step.size, "n"))];
    case "text":
      return [assistant(chars(step.size, "t"), { usage: { totalTokens: step.usage } })];
    case "tools": {
      const calls = step.calls.map((c, i) =>
        call(`s${n}c${i}`, i % 2 ? "edit" : "read", { path: `f${i}.ts`, pad: chars(c.size) }),
      );
      const results = step.calls.map((c, i) =>
        result(`s${n}c${i}`, chars(c.resultSize, "r"), calls[i]!.name, c.isError),
      );
      if (step.reversed) results.reverse();
      return [assistant(calls, { usage: { totalTokens: step.usage } }), ...results];
    }
    case "failed": {
      const calls = Array.from({ length: step.calls }, (_, i) => call(`s${n}c${i}`, "read", { path: "x" }));
      return [
        assistant([{ type: "text", text: chars(step.size, "p") }, ...calls], {
          stopReason: step.stopReason,
          errorMessage: "failed",
        }),
      ];
    }
    case "length": {
      const calls = Array.from({ length: step.calls }, (_, i) => call(`s${n}c${i}`, "write", { path: "y" }));
      const errors = calls.map((c) => result(c.id, "truncated call: re-issue it", c.name, true));
      return [assistant(calls, { stopReason: "length" }), ...errors];
    }
    case "compact":
      return [];
  }
}

/** A plain transcript from steps (compaction steps ignored). */
export function transcriptFrom(steps: readonly Step[]): AgentMessage[] {
  return steps.flatMap((step, n) => messagesOf(step, n));
}

/**
 * A session built from steps; each `compact` step runs `compact` with a summarizer that returns a
 * fixed-size text. `check` runs after every compaction (to assert history is never rewritten).
 */
export async function sessionFrom(
  steps: readonly Step[],
  model: Model,
  check: (session: MemorySession, before: unknown[]) => void = () => {},
): Promise<MemorySession> {
  const session = new MemorySession();
  let compactions = 0;
  for (const [n, step] of steps.entries()) {
    if (step.kind !== "compact") {
      session.add(...messagesOf(step, n));
      continue;
    }
    const before = structuredClone(session.entries);
    await compact(session, {
      model,
      keepRecentTokens: step.keepRecentTokens,
      summarize: (input) => `summary ${++compactions} of ${input.messages.length} messages${chars(40, ".")}`,
    });
    check(session, before);
  }
  return session;
}
