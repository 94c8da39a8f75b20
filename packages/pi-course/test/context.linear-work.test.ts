/**
 * The context budget does linear work: counted, not timed. Each message of a transcript is read a
 * fixed number of times by a projection, whatever the length (the bench's 100k / 10k time ratio
 * is V8's large arrays, not the algorithm: see bench/11-context.bench.ts).
 */
import { expect, it } from "vitest";
import { projectMessages, transcriptOf } from "../src/session/context.js";
import type { CompactionEntry, SessionEntry } from "../src/session/types.js";
import type { AgentMessage, AssistantMessage } from "../src/types.js";

/** `interactions` of 5 messages: a prompt, two parallel calls, their results out of order, an answer. */
function transcript(interactions: number): AgentMessage[] {
  const messages: AgentMessage[] = [];
  const base = { provider: "p", model: "m", timestamp: 1 };
  for (let n = 0; n < interactions; n++) {
    messages.push({ role: "user", content: [{ type: "text", text: `question ${n} `.repeat(20) }], timestamp: 1 });
    messages.push({
      ...base,
      role: "assistant",
      content: [0, 1].map((k) => ({ type: "toolCall" as const, id: `c${n}_${k}`, name: "read", arguments: { k } })),
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason: "toolUse",
    } as AssistantMessage);
    for (const k of [1, 0])
      messages.push({
        role: "toolResult",
        toolCallId: `c${n}_${k}`,
        toolName: "read",
        content: [{ type: "text", text: "x".repeat(400) }],
        isError: false,
        timestamp: 1,
      });
    messages.push({
      ...base,
      role: "assistant",
      content: [{ type: "text", text: `answer ${n}` }],
      usage: { input: 0, output: 0, totalTokens: 0 }, // chars/4 only: the kept tail is the same at every length
      stopReason: "stop",
    } as AssistantMessage);
  }
  return messages;
}

/** How many times `projectMessages` reads an element of the transcript, for each budget. */
function reads(interactions: number, budget: number): number {
  let count = 0;
  const messages = new Proxy(transcript(interactions), {
    get(target, key, receiver) {
      if (typeof key === "string" && /^\d+$/.test(key)) count++;
      return Reflect.get(target, key, receiver);
    },
  });
  projectMessages(messages, { budget, systemPrompt: "You are a coding agent." });
  return count;
}

it("a projection reads each message a fixed number of times: the work grows linearly with the transcript", () => {
  for (const budget of [2_000, 1e12]) {
    const [r1, r2, r4] = [reads(800, budget), reads(1_600, budget), reads(3_200, budget)];
    // reads(n) = a·n + b exactly: doubling the transcript adds the same reads per message.
    expect(r4 - r2).toBe(2 * (r2 - r1));
    expect((r2 - r1) / (800 * 5)).toBeLessThanOrEqual(6);
  }
});

it("transcriptOf fills arrays made at their final size: no holes, nothing extra, with and without a compaction", () => {
  const messages = transcript(40);
  const path: SessionEntry[] = messages.map((message, i) => ({
    type: "message",
    id: `e${i}`,
    parentId: i === 0 ? null : `e${i - 1}`,
    timestamp: "2026-01-01T00:00:00.000Z",
    message,
  }));
  path.splice(60, 0, {
    type: "label",
    id: "l1",
    parentId: "e59",
    timestamp: "2026-01-01T00:00:00.000Z",
    targetId: "e3",
    label: "x",
  } as SessionEntry);
  const plain = transcriptOf(path);
  expect(plain.messages).toEqual(messages);
  expect(Object.keys(plain.messages)).toHaveLength(messages.length);
  expect(plain.entryIds).toEqual(messages.map((_, i) => `e${i}`));

  const compaction: CompactionEntry = {
    type: "compaction",
    id: "k1",
    parentId: "e99",
    timestamp: "2026-01-01T00:00:00.000Z",
    summary: "earlier",
    firstKeptEntryId: "e90",
    tokensBefore: 1,
    tokensAfter: 1,
  };
  const compacted = transcriptOf([...path.slice(0, 101), compaction, ...path.slice(101)]);
  const kept = messages.slice(90);
  expect(compacted.messages).toHaveLength(1 + kept.length);
  expect(Object.keys(compacted.messages)).toHaveLength(1 + kept.length);
  expect(compacted.messages.slice(1)).toEqual(kept);
  expect(compacted.entryIds).toEqual(["k1", ...kept.map((_, i) => `e${90 + i}`)]);
  expect(compacted.usageFrom).toBe(11);
});
