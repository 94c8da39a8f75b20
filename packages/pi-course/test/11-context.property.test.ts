import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { projectContext, projectMessages, transcriptOf } from "../src/session/context.js";
import { groupInteractions } from "../src/session/interactions.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { estimateTokens } from "../src/session/token-estimate.js";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../src/types.js";
import type { ContextProjection } from "../src/session/context.js";
import { sessionFrom, stepArbitrary, transcriptFrom } from "./support/transcript-arbitrary.js";

/**
 * Random transcripts (tool calls, parallel batches answered in any order, errors, aborted and
 * length turns, custom messages, random usage, earlier compactions) × random budgets and system
 * prompts. Seeded: a failure prints its seed and the shrunk case.
 */
const SEED = 20_261_203;
const RUNS = process.env.PI_COURSE_PROOF ? 100 : 500;

const budgetArbitrary = fc.oneof(
  { arbitrary: fc.nat({ max: 300 }), weight: 1 },
  { arbitrary: fc.nat({ max: 30_000 }), weight: 3 },
);
const systemArbitrary = fc.option(
  fc.nat({ max: 2_000 }).map((n) => "s".repeat(n)),
  { nil: undefined },
);

/** Every way a projection can be wrong, as sentences (empty when it is right). */
function problemsOf(
  transcript: readonly AgentMessage[],
  projection: ContextProjection,
  options: { budget: number; systemPrompt?: string; usageFrom: number },
): string[] {
  const problems: string[] = [];
  const kept = projection.context.messages;
  // the newest interaction is always kept, even when it alone does not fit
  if (transcript.length > 0 && kept.length === 0) problems.push("the newest interaction was dropped: nothing is kept");
  // a suffix of the transcript that starts an interaction
  const starts = groupInteractions(transcript).map((g) => g.start);
  if (transcript.length > 0 && !starts.includes(projection.firstKept))
    problems.push(`firstKept ${projection.firstKept} starts no interaction`);
  if (
    kept.length !== transcript.length - projection.firstKept ||
    kept.some((m, i) => m !== transcript[projection.firstKept + i])
  ) {
    problems.push("the kept messages are not the transcript's suffix from firstKept");
  }
  // fits, or says why, and then keeps nothing but the newest interaction
  if (projection.tokens > options.budget) {
    if (!projection.overflow)
      problems.push(`${projection.tokens} tokens over the budget ${options.budget} with no overflow reported`);
    if (projection.firstKept !== (starts.at(-1) ?? transcript.length))
      problems.push("overflow while older interactions are still kept");
  } else if (projection.overflow) problems.push("overflow reported for a projection that fits");
  // the reported tokens are the estimate of what is kept
  const counts = estimateTokens({
    systemPrompt: options.systemPrompt,
    messages: transcript,
    usageFrom: options.usageFrom,
  });
  const expected = counts.systemPrompt + counts.messages.slice(projection.firstKept).reduce((a, b) => a + b, 0);
  if (projection.tokens !== expected)
    problems.push(`tokens ${projection.tokens}, estimate of the kept part ${expected}`);
  // the system prompt and the newest user message are always there
  if (projection.context.systemPrompt !== options.systemPrompt) problems.push("the system prompt was not kept");
  const newestUser = [...transcript].reverse().find((m) => m.role === "user");
  if (newestUser && !kept.includes(newestUser)) problems.push("the newest user message was dropped");
  // never starts with a tool result; every call with its results, every result with its call
  if (kept[0]?.role === "toolResult") problems.push("the projection starts with a tool result");
  problems.push(...pairingProblems(transcript, kept));
  return problems;
}

/** Checked independently of `openSpans`: pairs by id between what is kept and what exists. */
function pairingProblems(transcript: readonly AgentMessage[], kept: readonly AgentMessage[]): string[] {
  const problems: string[] = [];
  const answeredInTranscript = new Set(
    transcript.filter((m) => m.role === "toolResult").map((m) => (m as ToolResultMessage).toolCallId),
  );
  const calls = new Set<string>();
  const results = new Set<string>();
  for (const message of kept) {
    if (message.role === "assistant") {
      const a = message as AssistantMessage;
      if (a.stopReason === "error" || a.stopReason === "aborted") continue;
      for (const block of a.content) if (block.type === "toolCall") calls.add(block.id);
    } else if (message.role === "toolResult") {
      const id = (message as ToolResultMessage).toolCallId;
      if (!calls.has(id)) problems.push(`result ${id} kept without its call before it`);
      results.add(id);
    }
  }
  for (const id of calls)
    if (answeredInTranscript.has(id) && !results.has(id)) problems.push(`call ${id} kept without its result`);
  return problems;
}

describe("chapter 11 · the projection under random transcripts and budgets", () => {
  it(`Lab 11.2 · invariant: ${RUNS} random transcripts × budgets: fits or says why, whole interactions, stable`, () => {
    fc.assert(
      fc.property(
        fc.array(stepArbitrary(false), { maxLength: 60, size: "large" }),
        budgetArbitrary,
        systemArbitrary,
        (steps, budget, systemPrompt) => {
          const transcript = transcriptFrom(steps);
          const copy = structuredClone(transcript);
          const options = { budget, ...(systemPrompt !== undefined && { systemPrompt }) };
          const projection = projectMessages(transcript, options);
          const problems = problemsOf(transcript, projection, { budget, systemPrompt, usageFrom: 0 });
          if (JSON.stringify(projectMessages(transcript, options)) !== JSON.stringify(projection))
            problems.push("not stable");
          if (JSON.stringify(transcript) !== JSON.stringify(copy)) problems.push("the input was changed");
          // more budget never keeps less
          if (projectMessages(transcript, { ...options, budget: budget + 500 }).firstKept > projection.firstKept) {
            problems.push("a larger budget kept less");
          }
          if (problems.length > 0) throw new Error(problems.join("\n"));
        },
      ),
      { seed: SEED, numRuns: RUNS, includeErrorInReport: true },
    );
  }, 60_000);

  it(`Lab 11.4 · invariant: ${RUNS} random sessions with chained compactions: history kept, projection well formed`, async () => {
    const model = new ScriptedModel([]); // never asked: the summarizer is the test's
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArbitrary(true), { maxLength: 60, size: "large" }),
        budgetArbitrary,
        systemArbitrary,
        async (steps, budget, systemPrompt) => {
          const problems: string[] = [];
          const session = await sessionFrom(steps, model, (after, before) => {
            // compaction only ever appends: every earlier entry is still there, unchanged
            if (JSON.stringify(after.entries.slice(0, before.length)) !== JSON.stringify(before))
              problems.push("compaction rewrote history");
            if (after.entries.length > before.length + 1) problems.push("compaction appended more than one entry");
          });
          const path = session.path();
          const transcript = transcriptOf(path);
          const options = { budget, ...(systemPrompt !== undefined && { systemPrompt }) };
          const projection = projectMessages(transcript.messages, { ...options, usageFrom: transcript.usageFrom });
          problems.push(
            ...problemsOf(transcript.messages, projection, { budget, systemPrompt, usageFrom: transcript.usageFrom }),
          );
          if (transcript.compaction && transcript.messages[0]?.role !== "user")
            problems.push("a compacted transcript must start with its summary");
          // projectContext is that projection, and stable
          const ofPath = JSON.stringify(projectContext(path, options));
          if (ofPath !== JSON.stringify(projection))
            problems.push("projectContext differs from projecting transcriptOf(path)");
          if (JSON.stringify(projectContext(path, options)) !== ofPath) problems.push("not stable");
          if (problems.length > 0) throw new Error(problems.join("\n"));
        },
      ),
      { seed: SEED, numRuns: RUNS, includeErrorInReport: true },
    );
    expect(model.requests).toHaveLength(0);
  }, 60_000);
});
