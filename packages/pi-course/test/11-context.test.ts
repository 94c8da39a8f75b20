import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import { compact, findCut } from "../src/session/compaction.js";
import { projectContext, projectMessages, summaryMessage, transcriptOf } from "../src/session/context.js";
import { groupInteractions, openSpans } from "../src/session/interactions.js";
import { assistantMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { SessionFile } from "../src/session/session.js";
import { IMAGE_TOKENS, estimateTokens } from "../src/session/token-estimate.js";
import type { TokenEstimator } from "../src/session/token-estimate.js";
import type { AgentMessage, AgentTool, UserMessage } from "../src/types.js";
import type { CompactionEntry, SessionEntry } from "../src/session/types.js";
import { MemorySession, T0, assistant, call, chars, note, result, user } from "./support/session-memory.js";

const SUMMARY = "## Goal\nShip the parser.\n\n## Next steps\n1. Run the tests.";

function summaryModel(text = SUMMARY): ScriptedModel {
  return new ScriptedModel([assistantMessage([{ type: "text", text }], "stop")], { chunkSize: 10_000 });
}

function textOfUser(message: AgentMessage): string {
  return (message as UserMessage).content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

describe("chapter 11 · interactions", () => {
  it("Lab 11.1 · an interaction runs from a user message to the next; parallel calls pair by id, in any order", () => {
    const messages = [
      user("read both"),
      assistant([call("a", "read", { path: "a.ts" }), call("b", "read", { path: "b.ts" })]),
      result("b", "B"),
      result("a", "A"),
      assistant("done"),
      user("steer: also c"),
      note("app note"),
      assistant("ok"),
    ];
    expect(openSpans(messages)).toEqual([false, false, true, true, false, false, false, false]);
    expect(groupInteractions(messages)).toEqual([
      { start: 0, end: 5 },
      { start: 5, end: 8 },
    ]);
  });

  it("Lab 11.1 · messages before the first user message lead; a user message inside a call's span starts nothing", () => {
    const messages = [
      note("restored"),
      assistant("hello"),
      user("go"),
      assistant([call("a", "bash")]),
      user("typed while the tool ran"),
      result("a", "ok", "bash"),
      user("next"),
    ];
    expect(groupInteractions(messages)).toEqual([
      { start: 0, end: 2 },
      { start: 2, end: 6 },
      { start: 6, end: 7 },
    ]);
    expect(groupInteractions([])).toEqual([]);
  });

  it("Lab 11.1 · calls without a result are fine; orphan, duplicate and unreachable results are refused with the index", () => {
    const aborted = assistant([call("x", "read")], { stopReason: "aborted", errorMessage: "stopped" });
    expect(groupInteractions([user("u"), aborted, user("again")])).toEqual([
      { start: 0, end: 2 },
      { start: 2, end: 3 },
    ]);
    expect(() => openSpans([result("a", "lost")])).toThrow(
      'transcript message 0: the tool result for call "a" has no tool call before it; a provider would refuse the ' +
        "context. Fix the transcript (or the compaction that cut it) so every result follows its call.",
    );
    expect(() => openSpans([user("u"), assistant([call("a", "read")]), result("a", "1"), result("a", "2")])).toThrow(
      /message 3: a second tool result for call "a"/,
    );
    expect(() => openSpans([user("u"), aborted, result("x", "late")])).toThrow(
      /message 2: .*call "x" answers a call of an error\/aborted assistant message/,
    );
    const failed = assistant([call("y", "read")], { stopReason: "error", errorMessage: "overloaded" });
    expect(() => openSpans([user("u"), failed, result("y", "late")])).toThrow(
      /message 2: .*call "y" answers a call of an error\/aborted assistant message/,
    );
    // a later call reusing an answered id does not reopen it: two results sharing an id are refused
    expect(() =>
      openSpans([
        user("u"),
        assistant([call("a", "read")]),
        result("a", "1"),
        assistant([call("a", "read")]),
        result("a", "2"),
      ]),
    ).toThrow(/message 4: a second tool result for call "a"/);
    // a result before its call is an orphan too
    expect(() => openSpans([user("u"), result("a", "early"), assistant([call("a", "read")])])).toThrow(TypeError);
  });
});

describe("chapter 11 · projection to a budget", () => {
  // tokens (chars/4): user 10, call turn 4+4, result 10, text 10
  const turn = (n: number): AgentMessage[] => [
    user(chars(40, String(n))),
    assistant([call(`c${n}`, "read", { path: "a" })]),
    result(`c${n}`, chars(36)),
    assistant(chars(40)),
  ];
  const three = [...turn(1), ...turn(2), ...turn(3)]; // 34 tokens per interaction

  it("Lab 11.2 · everything fits: the whole transcript, counted at chars/4, system prompt included, tools passed on", () => {
    const tools: AgentTool<any, any>[] = [
      {
        name: "read",
        label: "read",
        description: "reads a file",
        parameters: Type.Object({}),
        execute: async () => ({ content: [], details: undefined }),
      },
    ];
    const projection = projectMessages(three, { budget: 1_000, systemPrompt: chars(20), tools });
    expect(projection.tokens).toBe(5 + 3 * 34);
    expect(projection.context).toEqual({ systemPrompt: chars(20), messages: three, tools });
    expect(projection.context.tools).toBe(tools);
    expect(projection).toMatchObject({ firstKept: 0, droppedInteractions: 0, budget: 1_000 });
    expect(projection.overflow).toBeUndefined();
  });

  it("Lab 11.2 · whole interactions are dropped from the oldest, never half of one", () => {
    // 5 + 34 + 34 = 73 fits; one token less and the middle interaction goes too, whole
    const fits = projectMessages(three, { budget: 73, systemPrompt: chars(20) });
    expect(fits).toMatchObject({ firstKept: 4, droppedInteractions: 1, tokens: 73 });
    expect(fits.context.messages).toEqual(three.slice(4));
    const tight = projectMessages(three, { budget: 72, systemPrompt: chars(20) });
    expect(tight).toMatchObject({ firstKept: 8, droppedInteractions: 2, tokens: 39 });
    expect(tight.context.messages[0]).toBe(three[8]);
    expect(tight.context.systemPrompt).toBe(chars(20));
  });

  it("Lab 11.2 · when the newest interaction cannot fit, the projection says so and keeps it whole", () => {
    const projection = projectMessages(three, { budget: 30, systemPrompt: chars(20) });
    expect(
      projection.context.messages,
      "the newest interaction was dropped: it is kept whole even when it alone does not fit",
    ).toEqual(three.slice(8));
    expect(projection.tokens).toBe(39);
    expect(projection.overflow).toEqual({
      systemPromptTokens: 5,
      newestInteractionTokens: 34,
      newestInteractionMessages: 4,
      budget: 30,
      message:
        "the context needs 39 tokens (system prompt 5, newest interaction 34 in 4 messages), over the budget of 30 " +
        "by 9; nothing older is left to drop. Compact the session, shorten the system prompt, or raise the budget.",
    });
    // a system prompt alone over budget is reported the same way
    const huge = projectMessages(three, { budget: 10, systemPrompt: chars(400) });
    expect(huge.overflow?.systemPromptTokens).toBe(100);
    expect(huge.context.messages).toEqual(three.slice(8));
  });

  it("Lab 11.2 · the newest trusted usage is exact: later messages add chars/4, failed and zero usage is ignored", () => {
    const messages = [
      user(chars(40)),
      assistant(chars(40), { usage: { input: 990, output: 10, totalTokens: 1_000 } }),
      user(chars(40)),
      assistant("", { stopReason: "error", errorMessage: "boom", usage: { totalTokens: 99_999 } }),
      assistant(chars(8), { usage: { totalTokens: 0 } }),
    ];
    const projection = projectMessages(messages, { budget: 5_000, systemPrompt: chars(40) });
    expect(projection.tokens).toBe(1_000 + 10 + 0 + 2);
    // the usage is spread over what it covered: dropping the first interaction subtracts its share
    const counts = estimateTokens({ systemPrompt: chars(40), messages });
    expect(counts.systemPrompt + counts.messages[0]! + counts.messages[1]!).toBe(1_000);
    expect(counts.messages.slice(2)).toEqual([10, 0, 2]);
    const trimmed = projectMessages(messages, { budget: 400, systemPrompt: chars(40) });
    expect(trimmed.firstKept).toBe(2);
    expect(trimmed.tokens).toBe(counts.systemPrompt + 12);
    // usage from before `usageFrom` (say, before a compaction) is not trusted
    expect(projectMessages(messages, { budget: 5_000, systemPrompt: chars(40), usageFrom: 2 }).tokens).toBe(
      10 + 10 + 10 + 10 + 0 + 2,
    );
  });

  it("Lab 11.2 · an image counts as IMAGE_TOKENS whatever its size, in a user message and in a tool result", () => {
    const image = { type: "image" as const, data: "aGk=", mimeType: "image/png" };
    const looking: UserMessage = { role: "user", content: [{ type: "text", text: chars(40) }, image], timestamp: T0 };
    const shot = { ...result("c1", chars(8), "shot"), content: [image, image] };
    const messages = [looking, assistant([call("c1", "shot")]), shot];
    const counts = estimateTokens({ messages }).messages;
    expect(counts[0]).toBe(10 + IMAGE_TOKENS);
    expect(counts[2]).toBe(2 * IMAGE_TOKENS + 1); // + "shot", the tool's name
    // the projection keeps a screenshot's interaction only when its images fit
    expect(projectMessages(messages, { budget: 5_000 }).tokens).toBe(counts[0]! + counts[1]! + counts[2]!);
    expect(projectMessages([...messages, user("and now?")], { budget: 3_000 })).toMatchObject({ firstKept: 3 });
  });

  it("Lab 11.2 · custom messages stay in place and count at their JSON length; the estimator is pluggable and checked", () => {
    const messages = [user("hi"), note("remember this"), assistant("ok")];
    const counts = estimateTokens({ messages });
    expect(counts.messages[1]).toBe(Math.ceil(JSON.stringify(messages[1]).length / 4));
    const perMessage: TokenEstimator = ({ messages: ms }) => ({ systemPrompt: 100, messages: ms.map(() => 1) });
    const projection = projectMessages(messages, { budget: 103, systemPrompt: "s", estimator: perMessage });
    expect(projection).toMatchObject({ tokens: 103, firstKept: 0 });
    expect(projection.context.messages[1]).toBe(messages[1]);
    const broken: TokenEstimator = ({ messages: ms }) => ({ systemPrompt: 0, messages: ms.map(() => Number.NaN) });
    expect(() => projectMessages(messages, { budget: 10, estimator: broken })).toThrow(
      /^projectMessages: the estimator counted message 0 as NaN;/,
    );
    const short: TokenEstimator = () => ({ systemPrompt: 0, messages: [] });
    expect(() => projectMessages(messages, { budget: 10, estimator: short })).toThrow(/one count per message \(3\)/);
    for (const budget of [-1, Number.NaN, Infinity, "10" as unknown as number]) {
      expect(() => projectMessages(messages, { budget })).toThrow(/budget must be a finite number of tokens >= 0/);
    }
  });

  it("Lab 11.2 · linear work: each message and each count is read a fixed number of times, however long the transcript", () => {
    /** `n` interactions of 5 messages: a prompt, two parallel calls, their results out of order, an answer. */
    const transcript = (n: number): AgentMessage[] =>
      Array.from({ length: n }, (_, k) => [
        user(`question ${k} `.repeat(20)),
        assistant([call(`c${k}_0`, "read", { k: 0 }), call(`c${k}_1`, "read", { k: 1 })]),
        result(`c${k}_1`, chars(400)),
        result(`c${k}_0`, chars(400)),
        assistant(`answer ${k}`),
      ]).flat();
    /** How many times one projection reads an element of the transcript or of the counts the estimator gave. */
    const reads = (n: number, budget: number): number => {
      let count = 0;
      const counted = <T extends object>(array: T): T =>
        new Proxy(array, {
          get(target, key, receiver) {
            if (typeof key === "string" && /^\d+$/.test(key)) count++;
            return Reflect.get(target, key, receiver);
          },
        });
      const estimator: TokenEstimator = (input) => {
        const counts = estimateTokens(input);
        return { ...counts, messages: counted(counts.messages) };
      };
      projectMessages(counted(transcript(n)), { budget, systemPrompt: "You are a coding agent.", estimator });
      return count;
    };
    for (const budget of [2_000, 1e12]) {
      const [r1, r2, r4] = [reads(100, budget), reads(200, budget), reads(400, budget)];
      // 200 interactions more are 1 000 messages more: linear work adds the same reads for each.
      expect(
        (r4 - r2) / 1_000,
        `reads per message added (budget ${budget}): summing every suffix again, or counting it again, grows with the transcript`,
      ).toBeLessThanOrEqual(20);
      expect(r4 - r2, "reads(n) = a·n + b: doubling the transcript twice adds twice the reads").toBe(2 * (r2 - r1));
    }
  });

  it("Lab 11.2 · pure: the input is untouched and the same input gives the same output", () => {
    const copy = structuredClone(three);
    const a = projectMessages(three, { budget: 50, systemPrompt: "sys" });
    const b = projectMessages(three, { budget: 50, systemPrompt: "sys" });
    expect(a).toEqual(b);
    expect(three).toEqual(copy);
    expect(projectMessages([], { budget: 0 })).toEqual({
      context: { messages: [] },
      tokens: 0,
      budget: 0,
      firstKept: 0,
      droppedInteractions: 0,
    });
  });
});

describe("chapter 11 · the transcript of a path", () => {
  function compaction(id: string, parentId: string, firstKeptEntryId: string, summary: string): CompactionEntry {
    return {
      type: "compaction",
      id,
      parentId,
      timestamp: new Date(T0).toISOString(),
      summary,
      firstKeptEntryId,
      tokensBefore: 0,
      tokensAfter: 0,
    };
  }

  it("Lab 11.3 · without a compaction: the message entries in order; labels are not context", () => {
    const session = new MemorySession();
    const [u] = session.add(user("hi"));
    session.entries.push({ type: "label", id: "l", parentId: u!, timestamp: "", targetId: u!, label: "start" });
    const path: SessionEntry[] = [...session.path(), session.entries[1]!];
    const transcript = transcriptOf(path);
    expect(transcript).toEqual({ messages: [user("hi")], entryIds: ["e0"], usageFrom: 0 });
  });

  it("Lab 11.3 · the newest compaction stands in for what it cut: summary first, then the kept entries, then the rest", () => {
    const session = new MemorySession();
    const ids = session.add(user("one"), assistant("1"), user("two"), assistant("2"));
    const old = compaction("c1", ids[3]!, ids[0]!, "first summary");
    const later = session.add(user("three"));
    const newer = compaction("c2", later[0]!, ids[2]!, "second summary");
    const after = [user("four"), assistant("4", { usage: { totalTokens: 50 } })];
    const path: SessionEntry[] = [
      ...session.path().slice(0, 4),
      old,
      session.path()[4]!,
      newer,
      ...after.map((message, i) => ({ type: "message" as const, id: `a${i}`, parentId: "c2", timestamp: "", message })),
    ];
    const transcript = transcriptOf(path);
    expect(transcript.messages).toEqual([summaryMessage(newer), user("two"), assistant("2"), user("three"), ...after]);
    expect(transcript.entryIds).toEqual(["c2", ids[2], ids[3], later[0], "a0", "a1"]);
    expect(transcript.usageFrom).toBe(4);
    expect(transcript.compaction).toBe(newer);
    const summary = transcript.messages[0]!;
    expect(summary.role).toBe("user");
    expect(textOfUser(summary)).toContain("<summary>\nsecond summary\n</summary>");
    expect(textOfUser(summary)).not.toContain("first summary");
    expect(summary.timestamp).toBe(T0);
  });

  it("Lab 11.3 · a compaction that names itself keeps nothing before it; one that names no entry of the path is refused", () => {
    const session = new MemorySession();
    const [u] = session.add(user("old"));
    const self = compaction("c", u!, "c", "all of it");
    expect(transcriptOf([...session.path(), self]).messages).toEqual([summaryMessage(self)]);
    // a compaction at the root of the path (the first entry) is found too
    const root = { ...self, parentId: null };
    expect(transcriptOf([root])).toEqual({
      messages: [summaryMessage(root)],
      entryIds: ["c"],
      usageFrom: 1,
      compaction: root,
    });
    const stray = compaction("c", u!, "nowhere", "s");
    expect(() => transcriptOf([...session.path(), stray])).toThrow(
      /firstKeptEntryId "nowhere" is not on the path before it/,
    );
    // an entry after the compaction is on the path, but not before it: refused too
    const ahead = compaction("c", u!, "later", "s");
    const later: SessionEntry = { type: "message", id: "later", parentId: "c", timestamp: "", message: user("new") };
    expect(() => transcriptOf([...session.path(), ahead, later])).toThrow(
      'compaction entry "c": its firstKeptEntryId "later" is not on the path before it. Pass the path from the root to the leaf (pathToLeaf).',
    );
  });

  it("Lab 11.3 · projectContext trusts usage only after the compaction, and refuses a cut that orphans a tool result", () => {
    const session = new MemorySession();
    const ids = session.add(
      user(chars(40)),
      assistant([call("a", "read", { path: "a" })]),
      result("a", chars(36)),
      assistant(chars(40), { usage: { totalTokens: 90_000 } }),
    );
    const good = compaction("c", ids[3]!, ids[0]!, chars(10));
    const projection = projectContext([...session.path(), good], { budget: 1_000 });
    const summaryTokens = Math.ceil(textOfUser(summaryMessage(good)).length / 4);
    expect(projection.tokens).toBe(summaryTokens + 10 + 4 + 10 + 10);
    expect(projection.context.messages[0]).toEqual(summaryMessage(good));
    // a hand-made compaction whose kept part starts at a tool result (pi #6832): refused, not sent
    const bad = compaction("c", ids[3]!, ids[2]!, "s");
    expect(() => projectContext([...session.path(), bad], { budget: 1_000 })).toThrow(/has no tool call before it/);
  });
});

describe("chapter 11 · compaction", () => {
  /** Three interactions; the second reads and edits files. 10 + (10+10+10+10) + ... tokens. */
  function workSession(): { session: MemorySession; ids: string[] } {
    const session = new MemorySession();
    const ids = session.add(
      user(chars(40, "a")),
      assistant(chars(40)),
      user(chars(40, "b")),
      assistant([call("r", "read", { path: "src/a.ts" }), call("w", "edit", { path: "src/b.ts", edits: [] })]),
      result("r", chars(36)),
      result("w", chars(36), "edit"),
      assistant(chars(40)),
      user(chars(40, "c")),
      assistant(chars(40)),
    );
    return { session, ids };
  }

  it("Lab 11.4 · compact asks the model, appends one compaction entry, and the projection starts from its summary", async () => {
    const { session, ids } = workSession();
    const model = summaryModel();
    const before = structuredClone(session.entries);
    const outcome = await compact(session, { model, keepRecentTokens: 20, systemPrompt: chars(40) });
    const summary = `${SUMMARY}\n\n<files-read>\nsrc/a.ts\n</files-read>\n<files-modified>\nsrc/b.ts\n</files-modified>`;
    const summaryTokens = Math.ceil(textOfUser(summaryMessage({ summary } as CompactionEntry)).length / 4);
    // system 10; then 10, 10, 10, the two calls (57 chars: 15), two results 10 + 10, then 10, 10, 10
    const entry = {
      type: "compaction",
      parentId: ids[8],
      summary,
      firstKeptEntryId: ids[7],
      tokensBefore: 10 + 10 + 10 + 10 + 15 + 10 + 10 + 10 + 10 + 10,
      tokensAfter: 10 + summaryTokens + 10 + 10,
    };
    expect(outcome).toEqual({ ok: true, entryId: "e9", entry, summarizedMessages: 7, keptMessages: 2 });
    expect(session.entries.slice(0, 9)).toEqual(before);
    expect(session.entries).toHaveLength(10);
    expect(session.leaf).toBe("e9");

    // the request: our system prompt, one user message with the conversation and the format
    expect(model.requests).toHaveLength(1);
    const request = model.requests[0]!;
    expect(request.tools).toBeUndefined();
    expect(request.systemPrompt).toMatch(/Reply with the summary alone/);
    const asked = textOfUser(request.messages[0]!);
    expect(asked).toContain(`<conversation>\n[User]: ${chars(40, "a")}\n\n[Assistant]: ${chars(40)}`);
    expect(asked).toContain('[Tool call]: read({"path":"src/a.ts"})');
    expect(asked).toContain(`[Tool result edit]: ${chars(36)}`);
    expect(asked).not.toContain(chars(40, "c"));
    for (const heading of [
      "## Goal",
      "## Constraints",
      "### Done",
      "### In progress",
      "## Decisions",
      "## Files",
      "## Open work",
      "## Next steps",
    ]) {
      expect(asked).toContain(heading);
    }

    const projection = projectContext(session.path(), { budget: 1_000 });
    expect(projection.context.messages).toEqual([
      summaryMessage(session.entries[9] as CompactionEntry),
      user(chars(40, "c")),
      assistant(chars(40)),
    ]);
  });

  it("Lab 11.4 · compact takes a chapter 10 SessionFile as it is: the entry is on disk, and the reopened path projects from it", async () => {
    const folder = await mkdtemp(join(tmpdir(), "pi-course-11-"));
    try {
      const file = join(folder, "s.jsonl");
      const session = await SessionFile.create(file, { cwd: folder });
      let parentId: string | null = null;
      const { session: memory } = workSession();
      for (const entry of memory.entries) {
        if (entry.type !== "message") continue;
        parentId = await session.append({ type: "message", parentId, message: entry.message });
      }
      const outcome = await compact(session, { model: summaryModel(), keepRecentTokens: 20 });
      expect(outcome.ok).toBe(true);
      await session.close();
      const reopened = await SessionFile.open(file);
      const leaf = reopened.leaf!;
      expect(leaf.type).toBe("compaction");
      expect(leaf.parentId).toBe(parentId);
      const projection = projectContext(reopened.pathToLeaf(leaf.id), { budget: 10_000 });
      expect(textOfUser(projection.context.messages[0]!)).toContain(SUMMARY);
      expect(projection.context.messages).toHaveLength(3);
      expect(reopened.entries()).toHaveLength(10);
      await reopened.close();
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("Lab 11.4 · a second compaction merges the previous summary and its files, and cuts only what came after it", async () => {
    const { session } = workSession();
    await compact(session, { model: summaryModel(), keepRecentTokens: 20 });
    session.add(
      assistant([call("x", "write", { path: "src/c.ts" })]),
      result("x", "written", "write"),
      user(chars(40, "d")),
    );
    const model = summaryModel("## Goal\nStill the parser.");
    const outcome = await compact(session, { model, keepRecentTokens: 10 });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.entry.firstKeptEntryId).toBe("e12");
    expect(outcome.summarizedMessages).toBe(4);
    expect(outcome.entry.summary).toBe(
      "## Goal\nStill the parser.\n\n<files-read>\nsrc/a.ts\n</files-read>\n<files-modified>\nsrc/b.ts\nsrc/c.ts\n</files-modified>",
    );
    const asked = textOfUser(model.requests[0]!.messages[0]!);
    expect(asked).toContain(`<previous-summary>\n${SUMMARY}`);
    expect(asked).toContain(`[User]: ${chars(40, "c")}`);
    expect(asked).not.toContain(`[User]: ${chars(40, "b")}`);
    const projection = projectContext(session.path(), { budget: 1_000 });
    expect(projection.context.messages).toEqual([
      summaryMessage(session.entries[13] as CompactionEntry),
      user(chars(40, "d")),
    ]);
  });

  it("Lab 11.4 · the request shows each kind of message plainly: reasoning left out, long results cut, failures labelled", async () => {
    const session = new MemorySession();
    session.add(
      user("fix the build"),
      assistant([
        { type: "thinking", thinking: "SECRET-REASONING" } as never,
        call("b", "bash", { command: "npm test" }),
      ]),
      result("b", chars(2_500, "o"), "bash", true),
      assistant("half an answ", { stopReason: "aborted", errorMessage: "the user pressed Esc" }),
      note("build is red"),
      user(chars(400, "z")),
    );
    const model = summaryModel();
    const outcome = await compact(session, { model, keepRecentTokens: 50, instructions: "  the failing test  " });
    expect(outcome).toMatchObject({ ok: true, summarizedMessages: 5, keptMessages: 1 });
    const asked = textOfUser(model.requests[0]!.messages[0]!);
    expect(asked).not.toContain("SECRET-REASONING");
    expect(asked).toContain('[Tool call]: bash({"command":"npm test"})');
    expect(asked).toContain(`[Tool error bash]: ${chars(2_000, "o")}… [500 more characters left out]`);
    expect(asked).toContain("[Assistant turn failed (aborted: the user pressed Esc)]: half an answ");
    expect(asked).toContain('[note]: {"role":"note","text":"build is red"');
    expect(asked).toContain("Summarise the conversation above.");
    expect(asked).not.toContain("<previous-summary>");
    expect(asked.endsWith("Pay particular attention to: the failing test")).toBe(true);
  }, 10_000);

  it("Lab 11.4 · a long tool loop is cut at an assistant message, never at a tool result nor inside a batch", () => {
    const messages = [
      user("do it all"),
      assistant([call("1", "read"), call("2", "read")]),
      result("1", chars(400)),
      result("2", chars(400)),
      assistant([call("3", "read")]),
      result("3", chars(400)),
      assistant("done"),
    ];
    const tokens = estimateTokens({ messages }).messages;
    // keeping 100 tokens reaches back into the results of call 3: snap forward to "done"
    expect(findCut(messages, tokens, 100, 1)).toBe(6);
    // keeping 103 reaches the call itself: cut just before it
    expect(findCut(messages, tokens, 103, 1)).toBe(4);
    // keeping 250 lands on result "2": the next cut point is the assistant message at 4
    expect(findCut(messages, tokens, 250, 1)).toBe(4);
    // everything fits in keepRecentTokens: nothing to cut
    const cuttable = tokens.slice(1).reduce((a, b) => a + b, 0);
    expect(findCut(messages, tokens, 10_000, 1)).toBe(
      `the 6 messages that could be cut hold ${cuttable} tokens, within keepRecentTokens (10000).`,
    );
    // only a batch after the first message: snap back to the call
    const batch = [user("u"), assistant([call("1", "read")]), result("1", chars(400))];
    expect(findCut(batch, estimateTokens({ messages: batch }).messages, 50, 1)).toBe(1);
    expect(findCut(batch, estimateTokens({ messages: batch }).messages, 50, 2)).toMatch(/no place to cut/);
  });

  it("Lab 11.4 · a failed summary appends nothing and says why", async () => {
    const cases: [ScriptedModel, RegExp][] = [
      [
        new ScriptedModel([{ stopReason: "error", errorMessage: "rate limited" }]),
        /the model failed \(error\): rate limited/,
      ],
      [
        new ScriptedModel([assistantMessage([{ type: "text", text: "## Goal\nhal" }], "length")]),
        /cut off at the model's length limit/,
      ],
      [
        new ScriptedModel([assistantMessage([{ type: "toolCall", id: "t", name: "read", arguments: {} }], "toolUse")]),
        /answered with a tool call instead of a summary/,
      ],
      [summaryModel("  \n"), /the summary is empty/],
      [new ScriptedModel([]), /the model failed \(error\)/],
    ];
    for (const [model, why] of cases) {
      const { session } = workSession();
      const outcome = await compact(session, { model, keepRecentTokens: 20 });
      expect(outcome.ok).toBe(false);
      if (outcome.ok) continue;
      expect(outcome.reason.kind).toBe("summary_failed");
      expect(outcome.reason.message).toMatch(why);
      expect(session.entries).toHaveLength(9);
    }
    const aborted = new AbortController();
    aborted.abort();
    const { session } = workSession();
    const outcome = await compact(session, { model: summaryModel(), keepRecentTokens: 20, signal: aborted.signal });
    expect(outcome).toMatchObject({
      ok: false,
      reason: { kind: "summary_failed", message: expect.stringMatching(/aborted/) },
    });
    expect(session.entries).toHaveLength(9);
  }, 10_000);

  it("Lab 11.4 · a summarize hook replaces the model call; nothing to compact and a refused append are reported", async () => {
    const { session } = workSession();
    const model = summaryModel();
    const seen: unknown[] = [];
    const outcome = await compact(session, {
      model,
      keepRecentTokens: 20,
      instructions: "keep the file names",
      summarize: (input) => {
        seen.push({ count: input.messages.length, previous: input.previousSummary, instructions: input.instructions });
        return "\n  hand-written  \n";
      },
    });
    expect(seen).toEqual([{ count: 7, previous: undefined, instructions: "keep the file names" }]);
    expect(model.requests).toHaveLength(0);
    // the summary is trimmed before the files section is added
    expect(outcome.ok && outcome.entry.summary.startsWith("hand-written\n\n<files-read>")).toBe(true);

    const again = await compact(session, { model, keepRecentTokens: 0 });
    expect(again).toEqual({
      ok: false,
      reason: { kind: "nothing_to_compact", message: "the leaf is already a compaction; nothing was added since." },
    });
    expect(await compact(new MemorySession(), { model, keepRecentTokens: 0 })).toMatchObject({
      ok: false,
      reason: { kind: "nothing_to_compact", message: "the session is empty." },
    });
    const small = new MemorySession();
    small.add(user("hi"), assistant("hello"));
    expect(await compact(small, { model, keepRecentTokens: 1_000 })).toMatchObject({
      ok: false,
      reason: { kind: "nothing_to_compact", message: expect.stringMatching(/within keepRecentTokens/) },
    });
    const failing = workSession().session;
    failing.failNextAppend = new Error("disk full");
    expect(await compact(failing, { model: summaryModel(), keepRecentTokens: 20 })).toEqual({
      ok: false,
      reason: { kind: "append_failed", message: "the session refused the compaction entry: disk full" },
    });
    expect(failing.entries).toHaveLength(9);
    await expect(compact(failing, { model, keepRecentTokens: -1 })).rejects.toThrow(
      /keepRecentTokens must be a finite number >= 0/,
    );
    // the conversation goes on while the summary is written: nothing is appended
    const busy = workSession().session;
    const moved = await compact(busy, {
      model,
      keepRecentTokens: 20,
      summarize: () => {
        busy.add(user("one more thing"));
        return "late";
      },
    });
    expect(moved).toEqual({
      ok: false,
      reason: {
        kind: "leaf_moved",
        message:
          'the session moved on while the summary was written (leaf "e8" is now "e9"); nothing appended. Compact again.',
      },
    });
    expect(busy.entries).toHaveLength(10);
    const broken: TokenEstimator = ({ messages }) => ({ systemPrompt: 0, messages: messages.map(() => -1) });
    await expect(compact(failing, { model, keepRecentTokens: 20, estimator: broken })).rejects.toThrow(
      /compact: the estimator counted message 0 as -1/,
    );
    // the count after the summary is checked the same way (message 0 is the new summary)
    const summaryBroken: TokenEstimator = ({ messages }) => ({
      systemPrompt: 0,
      messages: messages.map((m) => (m.role === "user" && textOfUser(m).includes("<summary>") ? -1 : 1)),
    });
    await expect(
      compact(failing, { model, keepRecentTokens: 1, estimator: summaryBroken, summarize: () => "s" }),
    ).rejects.toThrow(/^compact: the estimator counted message 0 as -1;/);
    // the summarizer gets the run's signal (to stop its model call); a blank summary is no summary
    const controller = new AbortController();
    const signals: unknown[] = [];
    const blank = await compact(failing, {
      model,
      keepRecentTokens: 20,
      signal: controller.signal,
      summarize: (input) => {
        signals.push(input.signal);
        return " \n\t ";
      },
    });
    expect(signals).toEqual([controller.signal]);
    expect(blank).toEqual({
      ok: false,
      reason: { kind: "summary_failed", message: "no summary, nothing appended: the summary is empty" },
    });
    // a summary longer than maxSummaryTokens is refused; without the limit the same one is appended
    const wordy = { model, keepRecentTokens: 20, summarize: () => "summary ".repeat(200) };
    const tooLong = await compact(failing, { ...wordy, maxSummaryTokens: 50 });
    expect(tooLong).toMatchObject({ ok: false, reason: { kind: "summary_failed" } });
    expect(!tooLong.ok && tooLong.reason.message).toMatch(
      /^the summary does not fit: it counts \d+ tokens, over the 50 allowed \(maxSummaryTokens\); nothing appended\.$/,
    );
    expect(failing.entries).toHaveLength(9);
    // exactly maxSummaryTokens fits (here every message counts 10)
    const tens: TokenEstimator = ({ messages }) => ({ systemPrompt: 0, messages: messages.map(() => 10) });
    const exact = workSession().session;
    const fits = await compact(exact, { ...wordy, estimator: tens, maxSummaryTokens: 10 });
    expect(fits.ok).toBe(true);
    expect(exact.entries).toHaveLength(10);
    const odd = await compact(failing, { model, keepRecentTokens: 20, summarize: () => 42 as unknown as string });
    expect(odd).toEqual({
      ok: false,
      reason: {
        kind: "summary_failed",
        message: "no summary, nothing appended: the summarizer returned number, not text",
      },
    });
    expect(failing.entries).toHaveLength(9);
  }, 10_000);
});
