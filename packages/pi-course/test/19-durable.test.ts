/**
 * Chapter 19: durable runs. Commit first, then visible: a tool call's intent is in the session
 * before its effect, its outcome right after; a streamed answer is kept before anyone sees it (the
 * journal, tested in durable.journal.test.ts); a run killed anywhere is recovered from what was
 * committed, without losing a step or repeating an effect. The last lab kills a real process
 * (SIGKILL) at many random points.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Type } from "typebox";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Agent } from "../src/agent/agent.js";
import { defineTool } from "../src/agent/tools.js";
import { RunJournal } from "../src/durable/journal.js";
import {
  CUT_ANSWER,
  applyRecovery,
  notRunText,
  planRecovery,
  resumeRun,
  uncertainText,
} from "../src/durable/recovery.js";
import { fileStreamJournal, streamPathOf, type DurableStore } from "../src/durable/store.js";
import { assistantMessage, userMessage } from "../src/messages.js";
import { ScriptedModel } from "../src/models/scripted-model.js";
import { transcriptOf } from "../src/session/context.js";
import { SessionFile } from "../src/session/session.js";
import type { AgentMessage, AgentTool, ToolCall } from "../src/types.js";
import { DONE, scriptModel, scriptTools } from "./support/durable-script.js";
import { call } from "./support/messages.js";
import { compileForNode } from "./support/session-crash.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(here, "..");

let dir: string;
const children: ChildProcess[] = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "pi-durable-"));
});
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await rm(dir, { recursive: true, force: true });
});

/** A tool that counts its runs. */
function counted(name: string, replay?: "safe"): AgentTool<any, any> & { runs: string[] } {
  const runs: string[] = [];
  const tool = defineTool({
    name,
    label: name,
    description: name,
    parameters: Type.Object({}),
    ...(replay && { replay }),
    execute: async (id) => {
      runs.push(id);
      return { content: [{ type: "text", text: `${name} ran` }], details: undefined };
    },
  });
  return Object.assign(tool, { runs });
}

/** A session holding a user prompt and an assistant message with `calls`, plus `extra` lines. */
async function crashedSession(calls: ToolCall[]): Promise<{ session: SessionFile; assistantId: string }> {
  const session = await SessionFile.create(path.join(dir, "c.jsonl"), { cwd: dir });
  const userId = await session.append({ type: "message", parentId: null, message: userMessage("go") });
  const assistantId = await session.append({
    type: "message",
    parentId: userId,
    message: assistantMessage([{ type: "text", text: "on it" }, ...calls], "toolUse"),
  });
  return { session, assistantId };
}

describe("planning recovery", () => {
  it("Lab 19.1 · each unanswered call: recorded (outcome committed), run (never started), replay (safe), interrupted (unsafe)", async () => {
    const { session, assistantId } = await crashedSession([
      call("a", "effect"),
      call("b", "effect"),
      call("c", "peek"),
      call("d", "effect"),
    ]);
    let at = assistantId;
    const commit = async (entry: Record<string, unknown>) => {
      at = await session.append({ ...(entry as any), parentId: at });
    };
    await commit({ type: "tool_intent", toolCallId: "a", toolName: "effect", arguments: {} });
    await commit({
      type: "tool_outcome",
      toolCallId: "a",
      toolName: "effect",
      content: [{ type: "text", text: "effect ran" }],
      isError: false,
    });
    await commit({ type: "tool_intent", toolCallId: "b", toolName: "effect", arguments: {} });
    await commit({ type: "tool_intent", toolCallId: "c", toolName: "peek", arguments: {} });
    const before = await readFile(session.path, "utf8");
    const tools = [counted("effect"), counted("peek", "safe")];
    const plan = await planRecovery(session, tools);
    expect(plan.calls.map((c) => [c.call.id, c.action])).toEqual([
      ["a", "recorded"],
      ["b", "interrupted"],
      ["c", "replay"],
      ["d", "run"],
    ]);
    expect(plan.calls[0]!.outcome).toMatchObject({ content: [{ type: "text", text: "effect ran" }] });
    expect(plan).toMatchObject({ leafId: at, unfinished: true });
    expect(plan.partial).toBe(undefined);
    expect(await readFile(session.path, "utf8")).toBe(before); // planning changes nothing
    await session.close();
  });

  it("Lab 19.1 · an answer cut mid-stream at the leaf becomes an aborted message; a stale copy, a finished run, a user message at the end", async () => {
    const { session, assistantId } = await crashedSession([]);
    const stream = fileStreamJournal(streamPathOf(session.path));
    // finished: the last answer has no calls
    expect(await planRecovery(session, [], stream)).toEqual({ leafId: assistantId, calls: [], unfinished: false });
    // a copy of an answer that continued the leaf: cut mid-stream
    const partial = assistantMessage([{ type: "text", text: "I will now" }], "stop");
    await stream.save({ parentId: assistantId, message: partial });
    const cut = await planRecovery(session, [], stream);
    expect(cut.partial).toEqual({ ...partial, stopReason: "aborted", errorMessage: CUT_ANSWER });
    expect(cut.unfinished).toBe(true);
    // a copy that continued another entry (its answer was written after all): stale, ignored
    const userId = session.entries()[0]!.id;
    await stream.save({ parentId: userId, message: partial });
    expect((await planRecovery(session, [], stream)).partial).toBe(undefined);
    // a run killed before its first answer: the transcript ends with the user's message
    const next = await session.append({ type: "message", parentId: assistantId, message: userMessage("more") });
    expect(await planRecovery(session, [])).toEqual({ leafId: next, calls: [], unfinished: true });
    await session.close();
  });

  it("Lab 19.1 · only what the journal committed below this call's message counts (an intent elsewhere in the tree does not)", async () => {
    const { session, assistantId } = await crashedSession([call("a", "effect")]);
    const userId = session.entries()[0]!.id;
    // a sibling branch holds an intent with the same call id: not this call's
    const other = await session.append({
      type: "message",
      parentId: userId,
      message: assistantMessage([call("a", "effect")], "toolUse"),
    });
    await session.append({ type: "tool_intent", parentId: other, toolCallId: "a", toolName: "effect", arguments: {} });
    // back on the crashed message's branch: the leaf's path goes through it
    await session.append({ type: "label", parentId: assistantId, targetId: assistantId, label: "here" });
    const plan = await planRecovery(session, [counted("effect")]);
    // never started on this branch (the other branch's intent is not this call's): run, not interrupted
    expect(plan.calls.map((c) => [c.call.id, c.action])).toEqual([["a", "run"]]);
    await session.close();
  });

  it("Lab 19.1 · a started call whose tool is no longer offered (an extension unloaded, a tool renamed) is interrupted, not replayed or run", async () => {
    const { session, assistantId } = await crashedSession([call("a", "gone")]);
    await session.append({
      type: "tool_intent",
      parentId: assistantId,
      toolCallId: "a",
      toolName: "gone",
      arguments: {},
    });
    const plan = await planRecovery(session, [counted("peek", "safe")]);
    expect(plan.calls.map((c) => [c.call.id, c.action])).toEqual([["a", "interrupted"]]);
    expect(plan.unfinished).toBe(true);
    await session.close();
  });

  it("Lab 19.1 · a session with no entry yet, or none that is a message: nothing to answer; a cut first answer (parentId null) is still kept", async () => {
    const session = await SessionFile.create(path.join(dir, "e.jsonl"), { cwd: dir });
    const stream = fileStreamJournal(streamPathOf(session.path));
    // killed before anything was written: nothing to recover
    expect(await planRecovery(session, [], stream)).toEqual({ leafId: undefined, calls: [], unfinished: false });
    // an answer that streamed with no leaf to continue (its parentId is null): cut mid-stream
    const partial = assistantMessage([{ type: "text", text: "I will now" }], "stop");
    await stream.save({ parentId: null, message: partial });
    expect(await planRecovery(session, [], stream)).toEqual({
      leafId: undefined,
      partial: { ...partial, stopReason: "aborted", errorMessage: CUT_ANSWER },
      calls: [],
      unfinished: true,
    });
    await stream.clear();
    // the leaf is a setting a person chose (/model), and the path holds no message at all
    const model = await session.append({ type: "model_change", parentId: null, model: "m", thinking: "off" });
    expect(await planRecovery(session, [], stream)).toEqual({ leafId: model, calls: [], unfinished: false });
    await session.close();
  });

  it("Lab 19.1 · a call left unanswered inside the path is chapter 10's, not recovery's, even when the last answer uses its id again (ids are only unique within one answer)", async () => {
    const { session, assistantId } = await crashedSession([call("a", "effect")]);
    // an older turn's call "a" never got a result; the user went on, and the next answer calls "a" again
    const next = await session.append({ type: "message", parentId: assistantId, message: userMessage("go on") });
    const again = await session.append({
      type: "message",
      parentId: next,
      message: assistantMessage([call("a", "effect")], "toolUse"),
    });
    const result: AgentMessage = {
      role: "toolResult",
      toolCallId: "a",
      toolName: "effect",
      content: [{ type: "text", text: "effect ran" }],
      isError: false,
      timestamp: 1,
    };
    const leaf = await session.append({ type: "message", parentId: again, message: result });
    const effect = counted("effect");
    // the last answer's call has its result: nothing to run; the run had not ended (it ends with a tool result)
    expect(await planRecovery(session, [effect])).toEqual({ leafId: leaf, calls: [], unfinished: true });
    await session.close();
  });
});

describe("applying recovery", () => {
  async function mixed() {
    const { session, assistantId } = await crashedSession([
      call("a", "effect"),
      call("b", "effect"),
      call("c", "peek"),
      call("d", "effect"),
    ]);
    let at = assistantId;
    for (const entry of [
      { type: "tool_intent", toolCallId: "a", toolName: "effect", arguments: {} },
      {
        type: "tool_outcome",
        toolCallId: "a",
        toolName: "effect",
        content: [{ type: "text", text: "a done" }],
        isError: false,
      },
      { type: "tool_intent", toolCallId: "b", toolName: "effect", arguments: {} },
      { type: "tool_intent", toolCallId: "c", toolName: "peek", arguments: {} },
    ])
      at = await session.append({ ...(entry as any), parentId: at });
    return session;
  }

  it("Lab 19.2 · applyRecovery appends one result per call, in order: the outcome, a rerun of the safe call, the unstarted call run once, the uncertain error", async () => {
    const session = await mixed();
    const effect = counted("effect");
    const peek = counted("peek", "safe");
    const plan = await planRecovery(session, [effect, peek]);
    const report = await applyRecovery(session, plan, { tools: [effect, peek] });
    const results = report.appended as (AgentMessage & { role: "toolResult" })[];
    expect(results.map((r) => [r.toolCallId, r.isError, r.content])).toEqual([
      ["a", false, [{ type: "text", text: "a done" }]],
      ["b", true, [{ type: "text", text: uncertainText("effect") }]],
      ["c", false, [{ type: "text", text: "peek ran" }]],
      ["d", false, [{ type: "text", text: "effect ran" }]],
    ]);
    expect(uncertainText("effect")).toBe(
      'Tool call "effect" was interrupted: the process stopped while it ran, so it may or may not have taken effect. Check before running it again.',
    );
    expect({ effect: effect.runs, peek: peek.runs }).toEqual({ effect: ["d"], peek: ["c"] });
    // in the session: the results continue the leaf, so the path holds every call's one result
    const messages = transcriptOf(session.pathToLeaf(session.leaf!.id)).messages;
    expect(messages.map((m) => ("role" in m ? m.role : "?"))).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "toolResult",
      "toolResult",
    ]);
    // a plan made before the session changed is refused
    await expect(applyRecovery(session, plan, { tools: [] })).rejects.toThrow(
      "applyRecovery: the session changed since the plan was made; make a new plan with planRecovery",
    );
    await session.close();
  });

  it("Lab 19.2 · a call recovery runs keeps its result's details (what the UI shows of it), as in a run", async () => {
    const { session } = await crashedSession([call("a", "edit")]);
    const edit = defineTool({
      name: "edit",
      label: "edit",
      description: "edit",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "edited" }], details: { diff: "-old\n+new" } }),
    });
    const { appended } = await applyRecovery(session, await planRecovery(session, [edit]), { tools: [edit] });
    const expected = {
      role: "toolResult",
      toolCallId: "a",
      toolName: "edit",
      content: [{ type: "text", text: "edited" }],
      details: { diff: "-old\n+new" },
      isError: false,
      timestamp: expect.any(Number),
    };
    expect(appended).toEqual([expected]);
    // in the session too
    expect(transcriptOf(session.pathToLeaf(session.leaf!.id)).messages.at(-1)).toEqual(expected);
    await session.close();
  });

  it("Lab 19.2 · a recorded outcome is appended as it was committed: an error stays an error", async () => {
    const { session, assistantId } = await crashedSession([call("a", "effect")]);
    let at = await session.append({
      type: "tool_intent",
      parentId: assistantId,
      toolCallId: "a",
      toolName: "effect",
      arguments: {},
    });
    at = await session.append({
      type: "tool_outcome",
      parentId: at,
      toolCallId: "a",
      toolName: "effect",
      content: [{ type: "text", text: "EACCES: permission denied" }],
      isError: true,
    });
    const effect = counted("effect");
    const plan = await planRecovery(session, [effect]);
    const { appended } = await applyRecovery(session, plan, { tools: [effect] });
    expect(appended).toMatchObject([
      {
        role: "toolResult",
        toolCallId: "a",
        content: [{ type: "text", text: "EACCES: permission denied" }],
        isError: true,
      },
    ]);
    expect(effect.runs).toEqual([]);
    await session.close();
  });

  it("Lab 19.2 · the cut answer is in the session before the stream journal is cleared: a recovery stopped in between loses nothing", async () => {
    const { session, assistantId } = await crashedSession([]);
    const stream = fileStreamJournal(streamPathOf(session.path));
    const partial = assistantMessage([{ type: "text", text: "I will now" }], "stop");
    await stream.save({ parentId: assistantId, message: partial });
    const plan = await planRecovery(session, [], stream);
    // the disk fails (or the process dies) while the cut answer is written
    const failing: DurableStore = {
      get leaf() {
        return session.leaf;
      },
      entries: () => session.entries(),
      pathToLeaf: (id) => session.pathToLeaf(id),
      append: async () => {
        throw new Error("ENOSPC: no space left on device");
      },
    };
    await expect(applyRecovery(failing, plan, { tools: [], stream })).rejects.toThrow("ENOSPC");
    // the answer is still kept: the next recovery finds it again and commits it
    const again = await planRecovery(session, [], stream);
    expect(again.partial).toEqual(plan.partial);
    await applyRecovery(session, again, { tools: [], stream });
    expect(await stream.load()).toBe(undefined);
    expect(transcriptOf(session.pathToLeaf(session.leaf!.id)).messages.at(-1)).toEqual(plan.partial);
    await session.close();
  });

  it("Lab 19.2 · a started call's tool settles what is left of it first (a command still running is stopped), and the model reads what became of it", async () => {
    const session = await mixed();
    const asked: string[] = [];
    const effect = {
      ...counted("effect"),
      settleInterrupted: (id: string) => {
        asked.push(id);
        return id === "b"
          ? "Its command was still running after the crash (1 process); it was stopped now."
          : undefined;
      },
    };
    const report = await applyRecovery(session, await planRecovery(session, [effect, counted("peek", "safe")]), {
      tools: [effect, counted("peek", "safe")],
      run: false,
    });
    expect(asked).toEqual(["b"]); // only the started call of a tool that can settle (a, d: outcome, never started)
    expect((report.appended[1] as { content: unknown }).content).toEqual([
      {
        type: "text",
        text:
          'Tool call "effect" was interrupted: the process stopped while it ran, so it may or may not have taken effect. ' +
          "Check before running it again. Its command was still running after the crash (1 process); it was stopped now.",
      },
    ]);
    await session.close();
  });

  it("Lab 19.2 · declined (run: false): nothing runs; the unstarted call is answered as not run, the started ones as uncertain", async () => {
    const session = await mixed();
    const effect = counted("effect");
    const peek = counted("peek", "safe");
    const report = await applyRecovery(session, await planRecovery(session, [effect, peek]), {
      tools: [effect, peek],
      run: false,
    });
    expect(report.appended.map((r) => (r as { content: unknown }).content)).toEqual([
      [{ type: "text", text: "a done" }],
      [{ type: "text", text: uncertainText("effect") }],
      [{ type: "text", text: uncertainText("peek") }],
      [{ type: "text", text: notRunText("effect") }],
    ]);
    expect(notRunText("effect")).toBe(
      'Tool call "effect" was not run: the process stopped before it started. Run it again if it is still needed.',
    );
    expect({ effect: effect.runs, peek: peek.runs }).toEqual({ effect: [], peek: [] });
    await session.close();
  });

  it("Lab 19.2 · resumeRun: the agent given the crashed session recovers it and goes on; the model gets a well-paired transcript", async () => {
    const session = await mixed();
    const stream = fileStreamJournal(streamPathOf(session.path));
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "finished" }], "stop")]);
    const effect = counted("effect");
    const peek = counted("peek", "safe");
    const agent = new Agent({ initialState: { model, tools: [effect, peek] } });
    const seen: string[] = [];
    const report = await resumeRun(agent, session, {
      stream,
      confirm: (plan) => {
        seen.push(plan.calls.map((c) => `${c.call.id}:${c.action}`).join(" "));
        return true;
      },
    });
    expect(seen).toEqual(["a:recorded b:interrupted c:replay d:run"]);
    expect(report?.appended).toHaveLength(4);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]!.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "toolResult",
      "toolResult",
    ]);
    expect(agent.state.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "stop" });
    // nothing left to recover: the next resume only attaches
    expect(await resumeRun(new Agent({ initialState: { model, tools: [] } }), session, { stream })).toBe(undefined);
    await session.close();
  });

  const KILLS = Number(process.env.PI_DURABLE_LIB_KILLS ?? 12);
  /**
   * Where the k-th child is killed, the same on every run: before and during each effect (its
   * intent written, its line not yet in the effects file; its line just written, the tool still
   * running), then once the session file holds n of the run's 18 lines, n spread over the run.
   */
  type KillPoint = { before: string } | { during: string } | { lines: number; thenMs: number };
  const POINTS: KillPoint[] = [
    { before: "c0" },
    { during: "c0" },
    { before: "c3" },
    { during: "c3" },
    ...Array.from({ length: KILLS }, (_, k) => ({ lines: 1 + ((k * 7) % 18), thenMs: (k * 5) % 15 })),
  ];
  it(
    `Lab 19.2 · SIGKILL of a real process at ${POINTS.length} points (before and during each effect, then over the run), then resumeRun: every call has one result, no effect twice, a success only where the effect happened, the run finishes`,
    async () => {
      // the child compiled to JavaScript once (inside the package, so its packages resolve): a start
      // under tsx would compile it again for each of the kills
      const build = path.join(packageDir, ".test-build", `durable-child-${process.pid}`);
      const childJs = compileForNode(path.join(here, "support", "durable-child.ts"), build);
      const stats = new Map<string, number>();
      const one = async (k: number) => {
        const point = POINTS[k]!;
        const file = path.join(dir, `k${k}.jsonl`);
        const effects = path.join(dir, `k${k}.effects`);
        const child = spawn(process.execPath, [childJs, file, effects], {
          cwd: packageDir,
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        let out = "";
        child.stdout!.on("data", (d: Buffer) => (out += d.toString("utf8")));
        const exited = new Promise((resolve) => child.on("close", resolve));
        const deadline = Date.now() + 60_000;
        while (!out.includes("started") && child.exitCode === null && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 5));
        expect(out).toContain("started");
        const sessionText = () => readFileSync(file, "utf8");
        const ranIds = () => readFileSync(effects, { encoding: "utf8", flag: "a+" }).split("\n");
        const intended = (id: string) =>
          sessionText()
            .split("\n")
            .some((line) => line.includes('"tool_intent"') && line.includes(`"toolCallId":"${id}"`));
        const reached: () => boolean =
          "before" in point
            ? () => intended(point.before) || ranIds().includes(point.before) // (a poll that came late: go on)
            : "during" in point
              ? () => ranIds().includes(point.during)
              : () => sessionText().split("\n").length - 2 >= point.lines;
        while (!reached() && child.exitCode === null && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 1));
        // before an effect: well inside the 30 ms the tool waits before it (what follows the intent is written)
        await new Promise((resolve) =>
          setTimeout(resolve, "before" in point ? 10 : "lines" in point ? point.thenMs : 0),
        );
        child.kill("SIGKILL");
        await exited;
        const session = await SessionFile.open(file);
        const last = session.leaf;
        const streamLeft = await readFile(streamPathOf(file)).then(
          () => true,
          () => false,
        );
        const kind = out.includes("finished")
          ? "after the run"
          : streamLeft
            ? "mid-stream"
            : last === undefined
              ? "before the first entry"
              : last.type === "message"
                ? `after a ${last.message.role} message`
                : `after a ${last.type}`;
        stats.set(kind, (stats.get(kind) ?? 0) + 1);
        const agent = new Agent({ initialState: { model: scriptModel(0), tools: scriptTools(effects) } });
        const journal = new RunJournal({ store: () => session });
        agent.setTools(journal.tools(scriptTools(effects)));
        await resumeRun(agent, session, { stream: fileStreamJournal(streamPathOf(file)) });
        if (session.leaf === undefined) await agent.prompt("run both effects"); // killed before the prompt was written
        const messages = transcriptOf(session.pathToLeaf(session.leaf!.id)).messages;
        const results = new Map<string, number>();
        for (const m of messages) {
          if (!("role" in m)) continue;
          if (m.role === "assistant" && m.stopReason !== "aborted")
            for (const b of m.content) if (b.type === "toolCall") results.set(b.id, results.get(b.id) ?? 0);
          if (m.role === "toolResult") results.set(m.toolCallId, (results.get(m.toolCallId) ?? 0) + 1);
        }
        for (const [id, n] of results) expect({ k, kind, id, n }).toEqual({ k, kind, id, n: 1 });
        const ran = (await readFile(effects, "utf8").catch(() => "")).split("\n").filter(Boolean);
        expect({ k, kind, ran }).toEqual({ k, kind, ran: [...new Set(ran)] });
        // a result that says the effect ran is only given where it did
        for (const m of messages)
          if ("role" in m && m.role === "toolResult" && m.toolName === "effect" && !m.isError)
            expect(
              ran,
              `kill ${k} (${kind}): a success result for ${m.toolCallId}, but its effect never ran`,
            ).toContain(m.toolCallId);
        expect(messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: DONE }] });
        await session.close();
      };
      let next = 0;
      try {
        await Promise.all(
          [0, 1].map(async () => {
            while (next < POINTS.length) await one(next++);
          }),
        );
      } finally {
        await rm(build, { recursive: true, force: true });
      }
      process.stdout.write(`chapter 19 crash test: ${[...stats].map(([k, n]) => `${n} ${k}`).join(", ")}\n`);
    },
    120_000 + POINTS.length * 30_000,
  );
});
