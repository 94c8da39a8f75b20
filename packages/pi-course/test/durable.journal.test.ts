/**
 * Chapter 19's run journal (src/durable/journal.ts and store.ts, given whole to read): a tool
 * call's intent is in the session file before the tool runs and its outcome right after; the
 * streamed answer is in the stream journal before a later listener sees it.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Type } from "typebox";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { defineTool } from "../src/agent/tools.js";
import { RunJournal } from "../src/durable/journal.js";
import { mayNeedRecovery } from "../src/durable/recovery.js";
import { fileStreamJournal, streamPathOf } from "../src/durable/store.js";
import { assistantMessage, userMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { transcriptOf } from "../src/session/context.js";
import { SessionFile } from "../src/session/session.js";
import type { AgentMessage, AgentTool, AssistantMessage } from "../src/types.js";
import { call } from "./support/messages.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-journal-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The lines of a session file after the header, as written. */
async function linesOf(file: string): Promise<Record<string, any>[]> {
  return (await readFile(file, "utf8"))
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => JSON.parse(line));
}

const kinds = (lines: Record<string, any>[]) => lines.map((l) => (l.type === "message" ? l.message.role : l.type));

/** A tool that counts its runs. */
function counted(name: string): AgentTool<any, any> & { runs: string[] } {
  const runs: string[] = [];
  const tool = defineTool({
    name,
    label: name,
    description: name,
    parameters: Type.Object({}),
    execute: async (id) => {
      runs.push(id);
      return { content: [{ type: "text", text: `${name} ran` }], details: undefined };
    },
  });
  return Object.assign(tool, { runs });
}

describe("intent before effect", () => {
  it("the call's intent is in the session file before the tool runs, its outcome right after, then the result message", async () => {
    const file = path.join(dir, "s.jsonl");
    const session = await SessionFile.create(file, { cwd: dir });
    const journal = new RunJournal({ store: () => session });
    let seenDuringRun: Record<string, any>[] = [];
    const probe = defineTool({
      name: "probe",
      label: "probe",
      description: "reads the session file while it runs",
      parameters: Type.Object({ n: Type.Number() }),
      execute: async () => {
        seenDuringRun = await linesOf(file);
        return { content: [{ type: "text", text: "probed" }], details: undefined };
      },
    });
    const model = new ScriptedModel([
      assistantMessage([call("p1", "probe", { n: 1 })], "toolUse"),
      assistantMessage([{ type: "text", text: "ok" }], "stop"),
    ]);
    const agent = new Agent({ session, initialState: { model, tools: journal.tools([probe]) } });
    await agent.prompt("probe it");
    expect(kinds(seenDuringRun)).toEqual(["user", "assistant", "tool_intent"]);
    expect(seenDuringRun[2]).toMatchObject({ toolCallId: "p1", toolName: "probe", arguments: { n: 1 } });
    const lines = await linesOf(file);
    expect(kinds(lines)).toEqual(["user", "assistant", "tool_intent", "tool_outcome", "toolResult", "assistant"]);
    expect(lines[3]).toMatchObject({
      toolCallId: "p1",
      toolName: "probe",
      content: [{ type: "text", text: "probed" }],
      isError: false,
    });
    // the intent and the outcome are off the conversation's path: the transcript is as before
    expect(agent.state.messages.map((m) => ("role" in m ? m.role : "?"))).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    expect(transcriptOf(session.pathToLeaf(session.leaf!.id)).messages).toHaveLength(4);
    await session.close();
  });

  it("a wrapped tool is given every argument the loop passes (the code tool of chapter 16 needs the fifth)", async () => {
    const session = await SessionFile.create(path.join(dir, "s.jsonl"), { cwd: dir });
    const seen: unknown[][] = [];
    const tool = {
      ...counted("probe"),
      execute: async (...args: unknown[]) => {
        seen.push(args);
        return { content: [{ type: "text" as const, text: "ok" }], details: undefined };
      },
    } as AgentTool<any, any>;
    const [wrapped] = new RunJournal({ store: () => session }).tools([tool]);
    const context = { marker: "the loop's execution context" };
    const signal = new AbortController().signal;
    const onUpdate = () => {};
    await (wrapped!.execute as (...args: unknown[]) => Promise<unknown>)("c1", {}, signal, onUpdate, context);
    expect(seen).toEqual([["c1", {}, signal, onUpdate, context]]);
    // …and the same without a session to journal into
    await (new RunJournal({ store: () => undefined }).wrap(tool).execute as (...args: unknown[]) => Promise<unknown>)(
      "c2",
      {},
      signal,
      onUpdate,
      context,
    );
    expect(seen[1]).toEqual(["c2", {}, signal, onUpdate, context]);
    await session.close();
  });

  it("a place a person moved between runs is no killed run: a /fork label at a question, a model change after it", async () => {
    const session = await SessionFile.create(path.join(dir, "s.jsonl"), { cwd: dir });
    const question = await session.append({ type: "message", parentId: null, message: userMessage("first") });
    const answer = await session.append({
      type: "message",
      parentId: question,
      message: assistantMessage([{ type: "text", text: "one" }], "stop"),
    });
    expect(await mayNeedRecovery(session)).toBe(false);
    // killed right after the question was committed: that is a run to go on with
    await session.append({ type: "message", parentId: answer, message: userMessage("second") });
    expect(await mayNeedRecovery(session)).toBe(true);
    // /fork 1: a label entry under the first question is the leaf; the next message starts a branch
    const fork = await session.append({ type: "label", parentId: question, targetId: question, label: null });
    expect(await mayNeedRecovery(session)).toBe(false);
    await session.append({ type: "model_change", parentId: fork, model: "m", thinking: "off" });
    expect(await mayNeedRecovery(session)).toBe(false);
    await session.close();
  });

  it("a tool that throws gets its error as the outcome; a tool whose intent cannot be written does not run", async () => {
    const file = path.join(dir, "s.jsonl");
    const session = await SessionFile.create(file, { cwd: dir });
    const boom = defineTool({
      name: "boom",
      label: "boom",
      description: "throws",
      parameters: Type.Object({}),
      execute: async () => {
        throw new Error("boom: the disk is full");
      },
    });
    const journal = new RunJournal({ store: () => session });
    const model = new ScriptedModel([
      assistantMessage([call("b1", "boom")], "toolUse"),
      assistantMessage([{ type: "text", text: "ok" }], "stop"),
    ]);
    const agent = new Agent({ session, initialState: { model, tools: journal.tools([boom]) } });
    await agent.prompt("go");
    const lines = await linesOf(file);
    expect(lines[3]).toMatchObject({
      type: "tool_outcome",
      toolCallId: "b1",
      isError: true,
      content: [{ type: "text", text: "boom: the disk is full" }],
    });
    expect(lines[4]!.message).toMatchObject({ role: "toolResult", toolCallId: "b1", isError: true });
    await session.close();

    // a store that refuses the intent: the tool never runs, the call gets the store's error
    const readOnly = await SessionFile.open(file, { readOnly: true });
    const effect = counted("effect");
    const refused = new RunJournal({ store: () => readOnly });
    const model2 = new ScriptedModel([
      assistantMessage([call("e1", "effect")], "toolUse"),
      assistantMessage([{ type: "text", text: "ok" }], "stop"),
    ]);
    const agent2 = new Agent({ initialState: { model: model2, tools: refused.tools([effect]) } });
    await agent2.prompt("go");
    expect(effect.runs).toEqual([]);
    const result = agent2.state.messages[2] as AgentMessage & { role: "toolResult" };
    expect(result).toMatchObject({ role: "toolResult", toolCallId: "e1", isError: true });
    expect(JSON.stringify(result.content)).toContain("read-only");

    // no session: the tools run as they are
    const free = new RunJournal({ store: () => undefined });
    const wrapped = free.wrap(effect);
    expect(wrapped.name).toBe("effect");
    expect(await wrapped.execute("x", {})).toMatchObject({ content: [{ type: "text", text: "effect ran" }] });
    expect(effect.runs).toEqual(["x"]);
  });
});

describe("intent before effect, after an abort", () => {
  it("a call stopped by the run's abort gets no late outcome: the file's last line stays on the message chain", async () => {
    const file = path.join(dir, "s.jsonl");
    const session = await SessionFile.create(file, { cwd: dir });
    const journal = new RunJournal({ store: () => session });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const slow = defineTool({
      name: "slow",
      label: "slow",
      description: "waits until stopped, then fails late",
      parameters: Type.Object({}),
      execute: (_id, _params, signal) =>
        new Promise<never>((_resolve, reject) => {
          started();
          signal?.addEventListener("abort", () => setTimeout(() => reject(new Error("stopped late")), 20), {
            once: true,
          });
        }),
    });
    const model = new ScriptedModel([assistantMessage([call("s1", "slow")], "toolUse")]);
    const agent = new Agent({ session, initialState: { model, tools: journal.tools([slow]) } });
    const run = agent.prompt("go");
    await running;
    agent.abort();
    await run;
    await new Promise((resolve) => setTimeout(resolve, 60)); // the tool's late failure has come and gone
    const lines = await linesOf(file);
    expect(kinds(lines).slice(0, 4)).toEqual(["user", "assistant", "tool_intent", "toolResult"]);
    expect(kinds(lines)).not.toContain("tool_outcome");
    const leafPath = transcriptOf(session.pathToLeaf(session.leaf!.id)).messages;
    expect(leafPath.map((m) => ("role" in m ? m.role : "?")).slice(0, 3)).toEqual(["user", "assistant", "toolResult"]);
    await session.close();
  });
});

describe("the streamed answer", () => {
  it("every delta is in the stream journal before a later listener sees it; the answer's end clears it", async () => {
    const file = path.join(dir, "s.jsonl");
    const session = await SessionFile.create(file, { cwd: dir });
    const streamFile = streamPathOf(file);
    expect(streamFile).toBe(`${file}.stream`);
    const journal = new RunJournal({ store: () => session, stream: () => fileStreamJournal(streamFile) });
    const model = new ScriptedModel(
      [assistantMessage([{ type: "text", text: "a streamed answer in pieces" }], "stop")],
      {
        chunkSize: 4,
      },
    );
    const agent = new Agent({ session, initialState: { model } });
    agent.subscribe(journal.listener);
    // what this event shows (its delta and all before it) must be kept already; the live partial
    // the event carries may run ahead of the kept copy, never behind it
    const checks: { arrived: string; kept: string; shown: string; parent: string | null }[] = [];
    const text = (m: AssistantMessage) => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    let arrived = "";
    let afterEnd: boolean | undefined;
    agent.subscribe(async (event) => {
      if (event.type === "message_update") {
        if (event.event.type === "text_delta") arrived += event.event.delta;
        const shown = text(event.message);
        const kept = (await fileStreamJournal(streamFile).load())!;
        checks.push({ arrived, kept: text(kept.message), shown, parent: kept.parentId });
      }
      if (event.type === "message_end" && event.message.role === "assistant")
        afterEnd = await readFile(streamFile).then(
          () => true,
          () => false,
        );
    });
    await agent.prompt("say it");
    const userEntry = session.entries()[0]!;
    expect(checks.length).toBeGreaterThan(3);
    for (const check of checks) {
      expect(check.parent).toBe(userEntry.id);
      expect(check.kept.startsWith(check.arrived), JSON.stringify(check)).toBe(true);
      expect(check.shown.startsWith(check.kept), JSON.stringify(check)).toBe(true);
    }
    expect(checks.at(-1)!.arrived).toBe("a streamed answer in pieces");
    expect(afterEnd).toBe(false);
    await session.close();
  });

  it("fileStreamJournal: save keeps the answer so far, load reads it back (or undefined), clear forgets it", async () => {
    const where = path.join(dir, "x.stream");
    const journal = fileStreamJournal(where);
    expect(await journal.load()).toBe(undefined);
    const message = assistantMessage([{ type: "text", text: "hal" }], "stop");
    await journal.save({ parentId: "abc", message });
    await journal.save({ parentId: "abc", message: { ...message, content: [{ type: "text", text: "half" }] } });
    expect(await journal.load()).toEqual({
      parentId: "abc",
      message: { ...message, content: [{ type: "text", text: "half" }] },
    });
    // an answer that continues another entry starts the file anew
    await journal.save({ parentId: "def", message });
    expect(await journal.load()).toEqual({ parentId: "def", message });
    expect((await readFile(where, "utf8")).split("\n")).toHaveLength(2);
    await writeFile(where, '{"parentId":"abc","mess');
    expect(await journal.load()).toBe(undefined);
    await journal.clear();
    await journal.clear();
    expect(await journal.load()).toBe(undefined);
  });

  it("fileStreamJournal appends one line per delta (the first a whole copy, then what changed): text, thinking, a tool call, the usage", async () => {
    const where = path.join(dir, "y.stream");
    const journal = fileStreamJournal(where);
    const states: AssistantMessage[] = [];
    let message = assistantMessage([{ type: "thinking", thinking: "let" }], "stop");
    const save = async (next: AssistantMessage) => {
      message = next;
      states.push(structuredClone(next));
      await journal.save({ parentId: null, message: next });
    };
    await save(message);
    await save({ ...message, content: [{ type: "thinking", thinking: "let me see" }] });
    await save({ ...message, content: [{ type: "thinking", thinking: "let me see", signature: "sig" }] });
    await save({ ...message, content: [...message.content, { type: "text", text: "I" }] });
    await save({ ...message, content: [message.content[0]!, { type: "text", text: "I will" }] });
    await save({ ...message, content: [message.content[0]!, { type: "text", text: "We" }] }); // not a prefix
    const call = { type: "toolCall" as const, id: "c1", name: "read", arguments: {} };
    await save({ ...message, content: [...message.content, call] });
    await save({
      ...message,
      content: [message.content[0]!, message.content[1]!, { ...call, arguments: { path: "a" } }],
    });
    await save({ ...message, usage: { ...message.usage, output: 42 } });
    await save(message); // nothing changed: nothing written
    const text = await readFile(where, "utf8");
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(states.length - 1);
    expect(JSON.parse(lines[0]!)).toEqual({ parentId: null, message: states[0] });
    expect(JSON.parse(lines[1]!)).toEqual({ patch: [[0, "+", " me see"]] });
    expect(JSON.parse(lines[4]!)).toEqual({ patch: [[1, "+", " will"]] });
    expect(JSON.parse(lines[5]!)).toEqual({ patch: [[1, "=", { type: "text", text: "We" }]] });
    expect(await journal.load()).toEqual({ parentId: null, message: states.at(-1) });
    // cut anywhere, as a crash mid-write leaves it: the answer as of the last whole line
    const bytes = Buffer.from(text, "utf8");
    const ends = [...bytes.keys()].filter((i) => bytes[i] === 0x0a).map((i) => i + 1);
    for (let cut = 0; cut <= bytes.length; cut++) {
      await writeFile(where, bytes.subarray(0, cut));
      // a line is whole once its newline is written, or when only the newline is missing (it parses)
      const whole = ends.filter((end) => end <= cut).length + (bytes[cut] === 0x0a ? 1 : 0);
      // line k holds state k (the last save changed nothing and wrote nothing)
      const expected = whole === 0 ? undefined : { parentId: null, message: states[whole - 1] };
      expect(await fileStreamJournal(where).load(), `cut at ${cut} of ${bytes.length}`).toEqual(expected);
    }
    await journal.clear();
    await expect(readFile(where)).rejects.toThrow(/ENOENT/);
  }, 60_000); // a write and a read at every byte of the file: 4.5 s alone, over 10 s beside a loaded run
});
