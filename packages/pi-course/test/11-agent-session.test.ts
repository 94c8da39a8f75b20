import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Type } from "typebox";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { SessionWriteError } from "../src/agent/agent-session.js";
import { interruptedText } from "../src/session/interrupted.js";
import { openSpans } from "../src/session/interactions.js";
import { textOf, userMessage } from "../src/messages.js";
import { SessionFile, messagesOf } from "../src/session/session.js";
import { estimateTokens } from "../src/session/token-estimate.js";
import type { ContextProjection } from "../src/session/context.js";
import type { ScriptedTurn } from "../src/models/scripted-model.js";
import type { AgentCompactionReport, AgentEvent, AgentSessionStore } from "../src/agent/types.js";
import type { AgentMessage, AgentTool, Message, ToolCall } from "../src/types.js";
import type { SessionEntry } from "../src/session/types.js";
import type { TokenEstimator } from "../src/session/token-estimate.js";
import { gate, grammarViolations, textResult } from "./support/agent-run.js";
import { says, scripted, text, turn } from "./support/messages.js";

const call = (id: string, args: unknown = {}): ToolCall => ({ type: "toolCall", id, name: "probe", arguments: args });
const probe = (execute: AgentTool<any, any>["execute"]): AgentTool<any, any> => ({
  name: "probe",
  label: "probe",
  description: "the probe tool",
  parameters: Type.Object({}),
  execute,
});
const note = (t: string): AgentMessage => ({ role: "note", text: t, timestamp: 1 }) as unknown as AgentMessage;

/** `role:text` of each message (custom messages by role). */
const texts = (messages: readonly AgentMessage[]): string[] =>
  messages.map((m) =>
    m.role === "user" || m.role === "assistant" || m.role === "toolResult"
      ? `${m.role}:${textOf(m as Message)}`
      : m.role,
  );

/** The rejection of `promise`; a construction site's error is rethrown, so practice shows it. */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (error === undefined) throw new Error("expected a rejection, but the promise resolved");
  if (String(error.message).includes("(not implemented yet)")) throw error;
  return error;
}

/** Tokens of a context at chars/4, every message counted by its characters (no usage trusted). */
const charsOf = (messages: readonly AgentMessage[], systemPrompt?: string) => {
  const counts = estimateTokens({ systemPrompt, messages, usageFrom: messages.length });
  return counts.systemPrompt + counts.messages.reduce((a, b) => a + b, 0);
};

/** Each entry continues the one before it (a single chain from the root). */
function expectChain(entries: readonly SessionEntry[]): void {
  entries.forEach((entry, i) => expect(entry.parentId).toBe(i === 0 ? null : entries[i - 1]!.id));
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pi-agent-session-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});
const newSession = (name = "s.jsonl") => SessionFile.create(join(dir, name), { cwd: dir });

describe("chapter 11 · the Agent with a session and a budget", () => {
  it("Lab 11.5 · every message_end is appended in order, each entry the child of the one before; a later listener finds it on disk", async () => {
    const session = await newSession();
    const model = scripted([turn([call("c1")]), says("done")]);
    const agent = new Agent({ session, initialState: { model, tools: [probe(async () => textResult("ok"))] } });
    const onDisk: boolean[] = [];
    const ended: AgentMessage[] = [];
    agent.subscribe((event) => {
      if (event.type !== "message_end") return;
      ended.push(event.message);
      const leaf = session.leaf;
      onDisk.push(leaf?.type === "message" && JSON.stringify(leaf.message) === JSON.stringify(event.message));
    });
    await agent.prompt("read it");
    const entries = session.entries();
    expect(entries.map((e) => e.type)).toEqual(["message", "message", "message", "message"]);
    expect(texts(messagesOf(entries))).toEqual(["user:read it", "assistant:", "toolResult:ok", "assistant:done"]);
    expectChain(entries);
    expect(messagesOf(entries)).toEqual(JSON.parse(JSON.stringify(ended)));
    expect(onDisk).toEqual([true, true, true, true]);
    await session.close();
  }, 10_000);

  it("Lab 11.5 · resume after a restart: a new Agent on the reopened file has the same transcript and goes on from it", async () => {
    const path = join(dir, "s.jsonl");
    const first = await SessionFile.create(path, { cwd: dir });
    const a = new Agent({
      session: first,
      initialState: {
        model: scripted([turn([call("c1")]), says("one")]),
        tools: [probe(async () => textResult("ok"))],
      },
    });
    await a.prompt("first");
    const before = JSON.parse(JSON.stringify(a.state.messages));
    await first.close();

    const reopened = await SessionFile.open(path);
    const model = scripted([says("two")]);
    const b = new Agent({ session: reopened, initialState: { model } });
    expect(b.state.messages).toEqual(before);
    await b.prompt("second");
    expect(texts(model.requests[0]!.messages)).toEqual([
      "user:first",
      "assistant:",
      "toolResult:ok",
      "assistant:one",
      "user:second",
    ]);
    expectChain(reopened.entries());
    expect(texts(messagesOf(reopened.entries()))).toEqual([...texts(before), "user:second", "assistant:two"]);
    await reopened.close();
  }, 10_000);

  it("Lab 11.5 · steering, follow-ups and custom messages are persisted where they were injected", async () => {
    const session = await newSession();
    let agent!: Agent;
    const tool = probe(async () => {
      agent.steer("also this");
      agent.followUp(note("a note"));
      agent.followUp("and then that");
      return textResult("ok");
    });
    const model = scripted([turn([call("c1")]), says("steered"), says("noted"), says("that")]);
    agent = new Agent({ session, followUpMode: "all", initialState: { model, tools: [tool] } });
    await agent.prompt("go");
    expect(texts(messagesOf(session.entries()))).toEqual([
      "user:go",
      "assistant:",
      "toolResult:ok",
      "user:also this",
      "assistant:steered",
      "note",
      "user:and then that",
      "assistant:noted",
    ]);
    expectChain(session.entries());
    expect(messagesOf(session.entries())).toEqual(JSON.parse(JSON.stringify(agent.state.messages)));
    await session.close();
  }, 10_000);

  it("Lab 11.5 · an aborted run is persisted well formed: every started call answered, and a resumed agent can go on", async () => {
    const path = join(dir, "s.jsonl");
    const session = await SessionFile.create(path, { cwd: dir });
    const started = gate();
    const tool = probe(
      (_id, _params, signal) =>
        new Promise((_resolve, reject) => {
          started.open();
          signal?.addEventListener("abort", () => reject(new Error("stopped")));
        }),
    );
    const agent = new Agent({
      session,
      initialState: { model: scripted([turn([call("c1"), call("c2")])]), tools: [tool] },
    });
    const run = agent.prompt("slow");
    await started.promise;
    agent.abort();
    await run;
    await session.close();

    const reopened = await SessionFile.open(path);
    const messages = messagesOf(reopened.entries());
    expect(messages).toEqual(JSON.parse(JSON.stringify(agent.state.messages)));
    expect(
      messages
        .filter((m) => m.role === "toolResult")
        .map((m) => (m as { toolCallId: string }).toolCallId)
        .sort(),
    ).toEqual(["c1", "c2"]);
    expect(() => openSpans(messages)).not.toThrow();
    expectChain(reopened.entries());
    const model = scripted([says("back")]);
    const resumed = new Agent({ session: reopened, initialState: { model } });
    await resumed.prompt("again");
    expect(model.requests[0]!.messages.at(-1)).toMatchObject({ role: "user" });
    expect(resumed.state.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
    await reopened.close();
  }, 10_000);

  it("Lab 11.5 · a tool call a crash left without a result gets an 'interrupted' error result at load, recorded by the next run", async () => {
    const path = join(dir, "s.jsonl");
    const crashed = await SessionFile.create(path, { cwd: dir });
    // What a kill during the call to c2 leaves: the call, one of its two results, nothing more.
    let at: string | null = null;
    for (const message of [
      userMessage("go"),
      turn([call("c1"), call("c2")]),
      { role: "toolResult", toolCallId: "c1", toolName: "probe", content: [text("ok")], isError: false, timestamp: 1 },
    ] as AgentMessage[]) {
      at = await crashed.append({ type: "message", parentId: at, message });
    }
    await crashed.close();

    const reopened = await SessionFile.open(path);
    const model = scripted([says("back")]);
    const agent = new Agent({ session: reopened, initialState: { model } });
    const synthetic = {
      role: "toolResult",
      toolCallId: "c2",
      toolName: "probe",
      content: [{ type: "text", text: interruptedText("probe") }],
      isError: true,
    };
    expect(agent.state.messages.at(-1)).toMatchObject(synthetic);
    expect(interruptedText("probe")).toContain('Tool call "probe" was interrupted');
    expect(() => openSpans(agent.state.messages)).not.toThrow();
    await agent.prompt("again");
    expect(texts(model.requests[0]!.messages)).toEqual([
      "user:go",
      "assistant:",
      "toolResult:ok",
      `toolResult:${interruptedText("probe")}`,
      "user:again",
    ]);
    expectChain(reopened.entries());
    expect(messagesOf(reopened.entries())[3]).toMatchObject(synthetic);
    await reopened.close();
    // Loaded again: recorded once, nothing added twice.
    const again = await SessionFile.open(path);
    const third = new Agent({ session: again, initialState: { model: scripted([]) } });
    expect(third.state.messages).toEqual(messagesOf(again.entries()));
    await again.close();

    // A file where a prompt followed the crash: the result goes right after the call, at every load.
    const poisoned = await SessionFile.create(join(dir, "p.jsonl"), { cwd: dir });
    at = null;
    for (const message of [userMessage("go"), turn([call("c9")]), userMessage("hello?")] as AgentMessage[]) {
      at = await poisoned.append({ type: "message", parentId: at, message });
    }
    const m2 = scripted([says("fine")]);
    const fourth = new Agent({ session: poisoned, initialState: { model: m2 } });
    await fourth.prompt("now");
    expect(texts(m2.requests[0]!.messages)).toEqual([
      "user:go",
      "assistant:",
      `toolResult:${interruptedText("probe")}`,
      "user:hello?",
      "user:now",
    ]);
    await poisoned.close();
  }, 10_000);

  it("Lab 11.5 · a refused write stops the run, loses nothing, is reported by prompt(), and blocks runs until setSession", async () => {
    const file = await newSession();
    let appends = 0;
    const store: AgentSessionStore = {
      get leaf() {
        return file.leaf;
      },
      pathToLeaf: (id) => file.pathToLeaf(id),
      append: (entry) => (++appends === 3 ? Promise.reject(new Error("disk full")) : file.append(entry)),
    };
    const model = scripted([turn([call("c1")]), says("never asked"), says("later")]);
    const agent = new Agent({ session: store, initialState: { model, tools: [probe(async () => textResult("ok"))] } });
    const events: AgentEvent[] = [];
    agent.subscribe((e) => {
      events.push(e);
    });
    const error = await rejectionOf(agent.prompt("go"));
    expect(error).toBeInstanceOf(SessionWriteError);
    expect(error.message).toContain("disk full");
    expect(texts((error as SessionWriteError).unsaved)).toEqual(["toolResult:ok"]);
    expect(texts(agent.state.messages)).toEqual(["user:go", "assistant:", "toolResult:ok"]);
    expect(texts(messagesOf(file.entries()))).toEqual(["user:go", "assistant:"]);
    expect(agent.state.errorMessage).toBe(error.message);
    expect(grammarViolations(events)).toEqual([]);
    expect(model.requests).toHaveLength(1); // the run stopped: no second model call
    await expect(agent.prompt("more")).rejects.toThrow(/session stopped taking writes/);
    agent.setSession(undefined); // detached: the transcript stays as it is
    expect(texts(agent.state.messages)).toEqual(["user:go", "assistant:", "toolResult:ok"]);
    await agent.prompt("more");
    expect(texts(agent.state.messages).slice(-2)).toEqual(["user:more", "assistant:never asked"]);
    await file.close();
  }, 10_000);

  it("Lab 11.5 · setSession switches sessions while idle (/new, /resume) and is refused during a run", async () => {
    const one = await newSession("one.jsonl");
    const model = scripted([says("a"), says("b"), says("c")]);
    const agent = new Agent({ session: one, initialState: { model } });
    await agent.prompt("in one");
    expect(texts(agent.state.messages)).toEqual(["user:in one", "assistant:a"]); // a snapshot taken before the switch
    const two = await newSession("two.jsonl");
    agent.setSession(two);
    expect(agent.state.messages).toEqual([]);
    const running = agent.prompt("in two");
    expect(() => agent.setSession(one)).toThrow(/busy/);
    await running;
    agent.setSession(one);
    expect(texts(agent.state.messages)).toEqual(["user:in one", "assistant:a"]);
    await agent.prompt("back in one");
    expect(texts(messagesOf(one.entries()))).toEqual(["user:in one", "assistant:a", "user:back in one", "assistant:c"]);
    expect(texts(messagesOf(two.entries()))).toEqual(["user:in two", "assistant:b"]);
    expect(() => agent.replaceMessages([])).toThrow(/session is attached/);
    expect(() => agent.reset()).toThrow(/session is attached/);
    expect(() => new Agent({ session: one, initialState: { messages: [] } })).toThrow(/either session/);
    expect(() => agent.setSession(one, { leafId: "nope" })).toThrow(/no entry "nope"/);
    expect(agent.session).toBe(one); // a refused switch changes nothing
    expect(() => new Agent({ contextBudget: { budget: 0 } })).toThrow(/budget must be/);
    expect(() => agent.setSession({} as AgentSessionStore)).toThrow(/expected a session/);
    await one.close();
    await two.close();
  }, 10_000);

  it("Lab 11.5 · every model call fits the budget across a long run, pairs intact; an overflow is reported, not cut", async () => {
    // A model that reports exact usage (chars/4) for the context it was sent: once the projection
    // trims, that is less than the whole transcript, and must not be trusted for it.
    const turns: ScriptedTurn[] = [];
    for (let i = 0; i < 30; i++) {
      turns.push((context) =>
        turn([text(`step ${i}`), call(`c${i}`)], "toolUse", charsOf(context.messages, context.systemPrompt) + 5),
      );
    }
    turns.push(says("finished"));
    const model = scripted(turns);
    let steps = 0;
    const tool = probe(async () => {
      if (++steps % 5 === 0) agent.steer(`keep going ${steps}`);
      return textResult("r".repeat(120));
    });
    const projections: ContextProjection[] = [];
    const seen: number[] = [];
    const agent: Agent = new Agent({
      initialState: { model, tools: [tool], systemPrompt: "be brief" },
      contextBudget: { budget: 300, onProjection: (p) => void projections.push(p) },
      transformContext: (messages) => {
        seen.push(messages.length);
        return messages;
      },
    });
    await agent.prompt("start");
    expect(model.requests).toHaveLength(31);
    for (const request of model.requests) {
      expect(charsOf(request.messages, request.systemPrompt)).toBeLessThanOrEqual(300);
      expect(request.messages[0]!.role).toBe("user");
      expect(() => openSpans(request.messages)).not.toThrow();
    }
    expect(projections.every((p) => p.overflow === undefined)).toBe(true);
    expect(projections.at(-1)!.droppedInteractions).toBeGreaterThan(0);
    expect(seen.at(-1)).toBe(agent.state.messages.length - 1); // the user hook saw the whole transcript, first
    expect(agent.state.messages.length).toBe(1 + 31 + 30 + 6); // the transcript keeps everything

    const big = scripted([says("ok")]);
    agent.setModel(big);
    await agent.prompt("x".repeat(2000));
    expect(projections.at(-1)!.overflow).toMatchObject({ budget: 300, newestInteractionMessages: 1 });
    expect(projections.at(-1)!.overflow!.message).toMatch(/over the budget of 300/);
    expect(textOf(big.requests[0]!.messages[0] as Message)).toBe("x".repeat(2000));
  }, 10_000);

  it("Lab 11.5 · auto-compaction at the threshold: the entry is on disk, the next call starts from the summary", async () => {
    const path = join(dir, "s.jsonl");
    const session = await SessionFile.create(path, { cwd: dir });
    const model = scripted([says("first answer"), says("second answer", 850), says("third answer")]);
    const summaryModel = scripted([says("## Goal\nKeep going.")]);
    const reports: AgentCompactionReport[] = [];
    const agent = new Agent({
      session,
      initialState: { model },
      contextBudget: { budget: 1000, keepRecentTokens: 10, summaryModel, onCompaction: (r) => void reports.push(r) },
    });
    await agent.prompt("first question");
    await agent.prompt("second question"); // before this run: no usage yet, a few tokens
    expect(reports).toEqual([]);
    await agent.prompt("third question"); // the last usage (850) passed 0.8 × 1000
    expect(reports).toHaveLength(1);
    const report = reports[0]!;
    if (!report.ok) throw new Error(`compaction failed: ${report.reason.message}`);
    expect(report.tokensBefore).toBe(850);
    expect(report.threshold).toBe(800);
    expect(report.tokensAfter).toBeLessThan(report.tokensBefore);
    expect(summaryModel.requests).toHaveLength(1);
    const request = model.requests[2]!;
    expect(textOf(request.messages[0] as Message)).toContain("<summary>\n## Goal\nKeep going.");
    expect(texts(request.messages.slice(1))).toEqual(["assistant:second answer", "user:third question"]);
    expect(agent.state.messages[0]).toEqual(request.messages[0]);
    await session.close();

    const reopened = await SessionFile.open(path);
    const entries = reopened.entries();
    expect(entries.map((e) => (e.type === "message" ? e.message.role : e.type))).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "compaction",
      "user",
      "assistant",
    ]);
    expectChain(entries);
    expect(entries[4]).toEqual(report.entry);
    expect(report.entry).toMatchObject({ firstKeptEntryId: entries[3]!.id, tokensBefore: 850 });
    // resumed with the same budget: the usage before the compaction (850, of the old context) is not
    // trusted, so the summary and what follows are counted afresh, far below the threshold
    const resumedReports: AgentCompactionReport[] = [];
    const resumed = new Agent({
      session: reopened,
      initialState: { model: scripted([says("fourth answer")]) },
      contextBudget: { budget: 1000, keepRecentTokens: 10, onCompaction: (r) => void resumedReports.push(r) },
    });
    expect(resumed.state.messages).toEqual(JSON.parse(JSON.stringify(agent.state.messages)));
    await resumed.prompt("fourth question");
    expect(resumedReports).toEqual([]);
    expect(texts(resumed.state.messages).at(-1)).toBe("assistant:fourth answer");
    await reopened.close();
  }, 10_000);

  it("Lab 11.5 · a failed compaction is reported, appends nothing, and the run goes on with the projection alone", async () => {
    const session = await newSession();
    const model = scripted([says("big", 900), says("still here")]);
    const summaryModel = scripted([{ stopReason: "error", errorMessage: "summary service down" }]);
    const reports: AgentCompactionReport[] = [];
    const projections: ContextProjection[] = [];
    const agent = new Agent({
      session,
      initialState: { model },
      contextBudget: {
        budget: 1000,
        keepRecentTokens: 0,
        summaryModel,
        onCompaction: (r) => void reports.push(r),
        onProjection: (p) => void projections.push(p),
      },
    });
    await agent.prompt("hello");
    await agent.prompt("again");
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({
      ok: false,
      tokensBefore: 900,
      threshold: 800,
      reason: { kind: "summary_failed" },
    });
    expect((reports[0] as { reason: { message: string } }).reason.message).toContain("summary service down");
    expect(session.entries().some((e) => e.type === "compaction")).toBe(false);
    expect(texts(model.requests[1]!.messages)).toEqual(["user:hello", "assistant:big", "user:again"]);
    expect(projections).toHaveLength(2);
    expect(agent.state.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
    await session.close();
  }, 10_000);

  it("Lab 11.5 · compaction is due at exactly compactAt times budget and gets the budget's estimator, summarize hook, keepRecentTokens (default a quarter) and the system prompt", async () => {
    const session = await newSession();
    // every message counts 100, a system prompt 200: the count is exact and easy to follow
    const estimator: TokenEstimator = ({ systemPrompt, messages }) => ({
      systemPrompt: systemPrompt === undefined ? 0 : 200,
      messages: messages.map(() => 100),
    });
    const model = scripted([turn([call("c1")]), says("a"), says("b"), says("c")]);
    const asked: string[][] = [];
    const reports: AgentCompactionReport[] = [];
    const projections: ContextProjection[] = [];
    let transcriptAtReport: string[] = [];
    const agent: Agent = new Agent({
      session,
      initialState: { model, systemPrompt: "be brief", tools: [probe(async () => textResult("ok"))] },
      contextBudget: {
        budget: 1000,
        estimator,
        summarize: (input) => {
          asked.push(texts(input.messages));
          return "hand summary";
        },
        onCompaction: (r) => {
          reports.push(r);
          transcriptAtReport = texts(agent.state.messages);
        },
        onProjection: (p) => void projections.push(p),
      },
    });
    await agent.prompt("one"); // 200 + 0 before it
    await agent.prompt("two"); // 200 + 4 × 100 = 600 before it
    expect(reports).toEqual([]);
    expect(agent.state.messages).toHaveLength(6);
    await agent.prompt("three"); // 200 + 6 × 100 = 800: the threshold, reached
    expect(reports).toHaveLength(1);
    const report = reports[0]!;
    if (!report.ok) throw new Error(`compaction failed: ${report.reason.message}`);
    // keepRecentTokens defaults to 1000 / 4 = 250: the newest three messages (300) are kept
    expect(asked).toEqual([["user:one", "assistant:", "toolResult:ok"]]);
    expect(report).toMatchObject({ tokensBefore: 800, threshold: 800, tokensAfter: 200 + 4 * 100 });
    // compact counted with the same estimator and the system prompt: its entry agrees with the report
    expect(report.entry).toMatchObject({ summary: "hand summary", tokensBefore: 800, tokensAfter: 600 });
    // the transcript was rebuilt before onCompaction was called
    const summary = texts(agent.state.messages)[0]!;
    expect(summary).toContain("<summary>\nhand summary\n</summary>");
    expect(transcriptAtReport).toEqual([summary, "assistant:a", "user:two", "assistant:b"]);
    // the summary came from the hook, not from the agent's model; the projection used the budget's estimator
    expect(model.requests).toHaveLength(4);
    expect(texts(model.requests[3]!.messages)).toEqual([
      summary,
      "assistant:a",
      "user:two",
      "assistant:b",
      "user:three",
    ]);
    expect(projections.at(-1)!.tokens).toBe(200 + 5 * 100);
    await session.close();
  }, 10_000);

  it("Lab 11.5 · a compact() that throws, or a summary that does not fit beside the kept messages, is reported and appends nothing", async () => {
    const file = await newSession();
    let broken = false;
    const store: AgentSessionStore = {
      get leaf() {
        return file.leaf;
      },
      pathToLeaf: (id) => {
        if (broken) throw new Error("the index is gone");
        return file.pathToLeaf(id);
      },
      append: (entry) => file.append(entry),
    };
    const reports: AgentCompactionReport[] = [];
    const model = scripted([says("big", 900), says("still here")]);
    const agent = new Agent({
      session: store,
      initialState: { model },
      contextBudget: { budget: 1000, summarize: () => "s", onCompaction: (r) => void reports.push(r) },
    });
    await agent.prompt("hello");
    broken = true;
    await agent.prompt("again");
    expect(reports).toEqual([
      {
        ok: false,
        tokensBefore: 900,
        threshold: 800,
        reason: { kind: "summary_failed", message: "compact threw: the index is gone" },
      },
    ]);
    expect(texts(messagesOf(file.entries()))).toEqual([
      "user:hello",
      "assistant:big",
      "user:again",
      "assistant:still here",
    ]);
    await file.close();

    // the summary may take what the kept messages leave of the budget: 1000 - 10
    const session = await newSession("wordy.jsonl");
    const wordy: AgentCompactionReport[] = [];
    const agent2 = new Agent({
      session,
      initialState: { model: scripted([says("big", 900), says("fine")]) },
      contextBudget: {
        budget: 1000,
        keepRecentTokens: 10,
        summarize: () => "x".repeat(4000),
        onCompaction: (r) => void wordy.push(r),
      },
    });
    await agent2.prompt("hello");
    await agent2.prompt("again");
    expect(wordy).toHaveLength(1);
    expect(wordy[0]).toMatchObject({ ok: false, reason: { kind: "summary_failed" } });
    expect((wordy[0] as { reason: { message: string } }).reason.message).toMatch(
      /^the summary does not fit: it counts \d+ tokens, over the 990 allowed \(maxSummaryTokens\); nothing appended\.$/,
    );
    expect(session.entries().some((e) => e.type === "compaction")).toBe(false);
    await session.close();
  }, 10_000);

  it("Lab 11.5 · a budget given later compacts from the usage recorded before it (no onCompaction needed)", async () => {
    const session = await newSession();
    const model = scripted([says("big", 900), says("after")]);
    const agent = new Agent({ session, initialState: { model } });
    await agent.prompt("hello"); // no budget yet: the answer's usage (900) is the whole transcript's
    agent.setContextBudget({ budget: 1000, keepRecentTokens: 0, summaryModel: scripted([says("## Goal\nHi.")]) });
    await agent.prompt("again");
    expect(session.entries().map((e) => e.type)).toEqual(["message", "message", "compaction", "message", "message"]);
    expect(textOf(model.requests[1]!.messages[0] as Message)).toContain("<summary>\n## Goal\nHi.");
    await session.close();
  }, 10_000);

  it("Lab 11.5 · an answer to a trimmed context does not vouch for the whole transcript: the next run still compacts", async () => {
    const session = await newSession();
    // the model reports as usage exactly the context it was sent
    const usageOf = (context: { messages: readonly AgentMessage[]; systemPrompt?: string }) =>
      charsOf(context.messages, context.systemPrompt);
    let agent!: Agent;
    const tool = probe(async () => {
      agent.steer("more");
      return textResult("r".repeat(200));
    });
    const model = scripted([
      (context) => turn([call("c1")], "toolUse", usageOf(context)),
      (context) => turn([call("c2")], "toolUse", usageOf(context)),
      (context) => turn([call("c3")], "toolUse", usageOf(context)),
      (context) => says("done", usageOf(context)),
      says("next"),
    ]);
    const reports: AgentCompactionReport[] = [];
    const projections: ContextProjection[] = [];
    agent = new Agent({
      session,
      initialState: { model, tools: [tool] },
      contextBudget: {
        budget: 150,
        keepRecentTokens: 0,
        summaryModel: scripted([says("## Goal\nGo on.")]),
        onCompaction: (r) => void reports.push(r),
        onProjection: (p) => void projections.push(p),
      },
    });
    await agent.prompt("go");
    expect(projections.at(-1)!.firstKept).toBeGreaterThan(0); // the last answer saw part of the transcript
    const whole = charsOf(agent.state.messages);
    const seen = model.requests[3]!.messages;
    expect(charsOf(seen)).toBeLessThan(0.8 * 150);
    expect(whole).toBeGreaterThanOrEqual(0.8 * 150);
    await agent.prompt("and now?");
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ ok: true, tokensBefore: whole });
    await session.close();
  }, 10_000);

  it("Lab 11.5 · after a refused write, the run's later messages join the same error's unsaved list, not the session", async () => {
    const file = await newSession();
    let appends = 0;
    const store: AgentSessionStore = {
      get leaf() {
        return file.leaf;
      },
      pathToLeaf: (id) => file.pathToLeaf(id),
      append: (entry) => (++appends === 3 ? Promise.reject(new Error("disk full")) : file.append(entry)),
    };
    const model = scripted([turn([call("c1"), call("c2")]), says("never asked")]);
    const agent = new Agent({ session: store, initialState: { model, tools: [probe(async () => textResult("ok"))] } });
    const error = await rejectionOf(agent.prompt("go"));
    expect(error).toBeInstanceOf(SessionWriteError);
    expect(error.message).toContain("1 message(s)"); // the count when it was made
    expect(texts((error as SessionWriteError).unsaved)).toEqual(["toolResult:ok", "toolResult:ok"]);
    expect(texts(messagesOf(file.entries()))).toEqual(["user:go", "assistant:"]);
    expect(appends).toBe(3); // nothing was offered to the session after the refusal
    await file.close();
  }, 10_000);

  it("Lab 11.5 · a transformContext that returns no array ends the run with a message saying so", async () => {
    const model = scripted([says("never")]);
    const agent = new Agent({
      initialState: { model },
      contextBudget: { budget: 1000 },
      transformContext: () => ({ messages: [] }) as unknown as AgentMessage[],
    });
    await agent.prompt("go");
    expect(model.requests).toHaveLength(0);
    expect(agent.state.messages.at(-1)).toMatchObject({
      role: "assistant",
      stopReason: "error",
      errorMessage: "transformContext failed: transformContext must return an array of messages",
    });
  }, 10_000);
});
