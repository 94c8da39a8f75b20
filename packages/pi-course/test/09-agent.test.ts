import { checkRejectionsPerTest } from "./support/leaks.js";
import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import {
  Agent,
  AgentListenerError,
  AssistantMessageEventStream,
  MessageQueue,
  agentLoop,
  assistantMessage,
  reduceAgentEvent,
  textOf,
} from "../src/index.js";
import type {
  AgentDraft,
  AgentEvent,
  AgentMessage,
  AgentTool,
  AssistantMessage,
  Message,
  Model,
} from "../src/index.js";
import { finish, gate, grammarViolations, shape, textResult } from "./support/agent-run.js";
import { call, says, scripted, turn, user } from "./support/messages.js";

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/** A tool whose behaviour each test scripts. */
function probe(execute: AgentTool<any, any>["execute"], name = "probe"): AgentTool<any, any> {
  return { name, label: name, description: `the ${name} tool`, parameters: Type.Object({}), execute };
}
const okTool = probe(async () => textResult("ok"));

/** Every event an agent's listener saw, and the runs they make (split at agent_start). */
function record(agent: Agent): { events: AgentEvent[]; runs: () => AgentEvent[][] } {
  const events: AgentEvent[] = [];
  agent.subscribe((event) => {
    events.push(event);
  });
  const runs = (): AgentEvent[][] => {
    const out: AgentEvent[][] = [];
    for (const event of events) {
      if (event.type === "agent_start") out.push([]);
      out.at(-1)?.push(event);
    }
    return out;
  };
  return { events, runs };
}

/** Each run's events follow the loop's grammar. */
function expectWellFormed(runs: AgentEvent[][]): void {
  for (const events of runs) {
    expect(
      grammarViolations(events),
      "the events a listener received break the loop's grammar (one is missing or out of order)",
    ).toEqual([]);
  }
}

/** The rejection of `promise` (a construction site's error is rethrown, so practice shows it). */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (error === undefined) throw new Error("expected a rejection, but the promise resolved");
  if (String(error.message).includes("(not implemented yet)")) throw error;
  return error;
}

const texts = (messages: readonly AgentMessage[]): string[] =>
  messages.map((m) =>
    m.role === "user" || m.role === "assistant" || m.role === "toolResult"
      ? `${m.role}:${textOf(m as Message)}`
      : m.role,
  );

// Any rejection left unhandled by a test fails that test, named by the rejection's stack (support/leaks.ts).
checkRejectionsPerTest(import.meta.url);

// ---------------------------------------------------------------------------------------------

describe("chapter 09 · the stateful agent", () => {
  // -------------------------------------------------------------------------------------------
  // The reducer (Lab 9.1): driven by a real loop's events, no Agent yet
  // -------------------------------------------------------------------------------------------

  const draft = (model: Model): AgentDraft => ({
    systemPrompt: undefined,
    model,
    tools: [],
    messages: [],
    isStreaming: true,
    streamingMessage: undefined,
    pendingToolCalls: new Set(),
    errorMessage: undefined,
  });

  it("Lab 9.1 · replaying a run's events rebuilds its transcript from message_end, in order", async () => {
    const model = scripted([turn([call("c1")]), says("done")]);
    const { events, result } = await finish(agentLoop([user("go")], { messages: [], tools: [okTool] }, { model }));
    const state = draft(model);
    for (const event of events) expect(reduceAgentEvent(state, event)).toBe(true);
    expect(state.messages).toEqual(result);
    expect(state.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(state.streamingMessage).toBeUndefined();
    expect(state.pendingToolCalls.size).toBe(0);
    expect(state.errorMessage).toBeUndefined();
  }, 5000);

  it("Lab 9.1 · streamingMessage is the assistant message between its start and its end, never a user message", async () => {
    const model = scripted([says("hi")]);
    const { events } = await finish(agentLoop([user("go")], { messages: [] }, { model }));
    const state = draft(model);
    const seen: string[] = [];
    for (const event of events) {
      reduceAgentEvent(state, event);
      const role = event.type.startsWith("message_") ? `:${(event as { message: AgentMessage }).message.role}` : "";
      seen.push(
        `${event.type}${role} ${state.streamingMessage === undefined ? "-" : textOf(state.streamingMessage) || "''"}`,
      );
    }
    expect(seen).toEqual([
      "agent_start -",
      "turn_start -",
      "message_start:user -",
      "message_end:user -",
      "message_start:assistant hi",
      "message_update:assistant hi",
      "message_end:assistant -",
      "turn_end -",
      "agent_end -",
    ]);
  }, 5000);

  it("Lab 9.1 · pendingToolCalls holds started calls until they end, as a new set at every change", () => {
    const state = draft(scripted([]));
    const start = (id: string): AgentEvent => ({
      type: "tool_execution_start",
      toolCallId: id,
      toolName: "probe",
      args: {},
    });
    const end = (id: string): AgentEvent => ({
      type: "tool_execution_end",
      toolCallId: id,
      toolName: "probe",
      result: textResult("ok"),
      isError: false,
    });
    reduceAgentEvent(state, start("a"));
    const afterA = state.pendingToolCalls;
    reduceAgentEvent(state, start("b"));
    expect([...state.pendingToolCalls]).toEqual(["a", "b"]);
    expect([...afterA]).toEqual(["a"]); // an earlier snapshot's set never changes
    reduceAgentEvent(state, end("a"));
    expect([...state.pendingToolCalls]).toEqual(["b"]);
    reduceAgentEvent(state, end("b"));
    expect(state.pendingToolCalls.size).toBe(0);
  });

  it("Lab 9.1 · a tool_execution_update of a call that is not running is refused and changes nothing", () => {
    const state = draft(scripted([]));
    const update: AgentEvent = {
      type: "tool_execution_update",
      toolCallId: "a",
      toolName: "probe",
      args: {},
      partialResult: textResult("late"),
    };
    expect(reduceAgentEvent(state, update)).toBe(false);
    reduceAgentEvent(state, { type: "tool_execution_start", toolCallId: "a", toolName: "probe", args: {} });
    const running = state.pendingToolCalls;
    expect(reduceAgentEvent(state, update)).toBe(true);
    expect(state.pendingToolCalls).toBe(running);
    reduceAgentEvent(state, {
      type: "tool_execution_end",
      toolCallId: "a",
      toolName: "probe",
      result: textResult("ok"),
      isError: false,
    });
    const ended = state.pendingToolCalls;
    expect(reduceAgentEvent(state, update)).toBe(false);
    expect(state.pendingToolCalls).toBe(ended);
    expect(ended.has("a")).toBe(false);
  });

  it("Lab 9.1 · a tool_execution_end of a call that is not running is delivered and changes nothing", () => {
    const state = draft(scripted([]));
    const before = state.pendingToolCalls;
    const stray: AgentEvent = {
      type: "tool_execution_end",
      toolCallId: "ghost",
      toolName: "probe",
      result: textResult("ok"),
      isError: false,
    };
    expect(reduceAgentEvent(state, stray)).toBe(true);
    expect(state.pendingToolCalls).toBe(before);
  });

  it("Lab 9.1 · turn_end of a failed turn sets errorMessage; a later good turn of the run keeps it", () => {
    const state = draft(scripted([]));
    const failed = assistantMessage([], "error", { errorMessage: "boom" });
    reduceAgentEvent(state, { type: "turn_end", message: says("fine"), toolResults: [] });
    expect(state.errorMessage).toBeUndefined();
    reduceAgentEvent(state, { type: "turn_end", message: failed, toolResults: [] });
    expect(state.errorMessage).toBe("boom");
    reduceAgentEvent(state, { type: "turn_end", message: says("fine"), toolResults: [] });
    expect(state.errorMessage).toBe("boom");
    // a failed turn that says nothing still leaves a message saying how it ended
    const silent = draft(scripted([]));
    reduceAgentEvent(silent, { type: "turn_end", message: assistantMessage([], "aborted"), toolResults: [] });
    expect(silent.errorMessage).toBe('The turn ended with stopReason "aborted".');
  });

  it("Lab 9.1 · agent_end's errorMessage (the turn limit) sets errorMessage; an agent_end without one keeps it", () => {
    const state = draft(scripted([]));
    reduceAgentEvent(state, { type: "agent_end", messages: [] });
    expect(state.errorMessage).toBeUndefined();
    reduceAgentEvent(state, { type: "agent_end", messages: [], errorMessage: "Turn limit reached: …" });
    expect(state.errorMessage).toBe("Turn limit reached: …");
    reduceAgentEvent(state, { type: "agent_end", messages: [] });
    expect(state.errorMessage).toBe("Turn limit reached: …");
  });

  it("Lab 9.1 · message_update sets streamingMessage to the update's own message, not the one message_start gave", () => {
    const state = draft(scripted([]));
    const started = assistantMessage([], "stop");
    const updated = assistantMessage([{ type: "text", text: "hi" }], "stop");
    reduceAgentEvent(state, { type: "message_start", message: started });
    expect(state.streamingMessage).toBe(started);
    reduceAgentEvent(state, {
      type: "message_update",
      message: updated,
      event: { type: "text_delta", contentIndex: 0, delta: "hi", partial: updated },
    });
    expect(state.streamingMessage).toBe(updated);
  });

  // -------------------------------------------------------------------------------------------
  // The queues (Lab 9.2)
  // -------------------------------------------------------------------------------------------

  it("Lab 9.2 · one-at-a-time takes the oldest message per poll; the rest wait in order", () => {
    const queue = new MessageQueue();
    expect(queue.mode).toBe("one-at-a-time");
    const [a, b, c] = [user("a"), user("b"), user("c")];
    queue.push(a);
    queue.push(b);
    queue.push(c);
    expect(queue.take()).toEqual([a]);
    expect(queue.peek()).toEqual([b, c]);
    expect(queue.take()).toEqual([b]);
    queue.push(a);
    expect(queue.take()).toEqual([c]);
    expect(queue.take()).toEqual([a]);
    expect(queue.take()).toEqual([]);
    expect(queue.size).toBe(0);
  });

  it("Lab 9.2 · all takes every waiting message in one poll; switching modes keeps the order", () => {
    const queue = new MessageQueue("all");
    const ms = ["a", "b", "c", "d"].map(user);
    for (const m of ms) queue.push(m);
    queue.mode = "one-at-a-time";
    expect(queue.take()).toEqual([ms[0]]);
    queue.mode = "all";
    expect(queue.take()).toEqual(ms.slice(1));
    expect(queue.take()).toEqual([]);
    expect(() => (queue.mode = "some" as never)).toThrow(/"one-at-a-time" or "all"/);
  });

  it("Lab 9.2 · 10,000 messages through one-at-a-time polls: none lost, none doubled, in order", () => {
    const queue = new MessageQueue();
    const taken: AgentMessage[] = [];
    const pushed: AgentMessage[] = [];
    for (let i = 0; i < 10_000; i++) {
      const m = user(String(i));
      pushed.push(m);
      queue.push(m);
      if (i % 3 !== 0) taken.push(...queue.take());
    }
    // bounded: a take() that returns nothing while size stays above 0 must fail, not spin forever
    for (let polls = 0; queue.size > 0 && polls < 10_000; polls++) taken.push(...queue.take());
    expect(taken).toEqual(pushed);
    expect(new Set(taken).size).toBe(10_000);
  });

  // -------------------------------------------------------------------------------------------
  // The agent and its run lifecycle (Lab 9.3)
  // -------------------------------------------------------------------------------------------

  it("Lab 9.3 · prompt(text) runs the loop: listeners see the loop's events, state keeps the transcript", async () => {
    const model = scripted([turn([call("c1")]), says("done")]);
    const agent = new Agent({ initialState: { systemPrompt: "Be terse.", model, tools: [okTool] } });
    const { events, runs } = record(agent);
    expect(agent.state.isStreaming).toBe(false);
    await agent.prompt("go");
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expectWellFormed(runs());
    const state = agent.state;
    expect(state.messages).toEqual((events.at(-1) as { messages: AgentMessage[] }).messages);
    expect(texts(state.messages)).toEqual(["user:go", "assistant:", "toolResult:ok", "assistant:done"]);
    expect(state).toMatchObject({ isStreaming: false, systemPrompt: "Be terse.", model });
    expect(state.errorMessage).toBeUndefined();
    expect(state.pendingToolCalls.size).toBe(0);
    expect(model.requests[0]!.systemPrompt).toBe("Be terse.");
  }, 5000);

  it("Lab 9.3 · the state takes each event in before any listener sees it", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("hi")]) } });
    const seen: string[] = [];
    agent.subscribe((event) => {
      const s = agent.state;
      if (event.type === "message_end")
        seen.push(`end ${event.message.role} in transcript: ${s.messages.at(-1) === event.message}`);
      if (event.type === "message_update") seen.push(`update streaming: ${s.streamingMessage === event.message}`);
      if (event.type === "agent_end") seen.push(`agent_end isStreaming: ${s.isStreaming}`);
    });
    await agent.prompt("hello");
    expect(seen).toEqual([
      "end user in transcript: true",
      "update streaming: true",
      "end assistant in transcript: true",
      "agent_end isStreaming: true",
    ]);
    expect(agent.state.isStreaming).toBe(false);
  }, 5000);

  it("Lab 9.3 · a state snapshot never changes; arrays given to the agent are copied, never kept", async () => {
    const tools = [okTool];
    const messages: AgentMessage[] = [user("earlier")];
    const agent = new Agent({ initialState: { model: scripted([says("a"), says("b")]), tools, messages } });
    tools.push(probe(async () => textResult("x"), "other"));
    messages.push(user("sneaked in"));
    const before = agent.state;
    await agent.prompt("one");
    expect(texts(before.messages)).toEqual(["user:earlier"]);
    expect(Object.isFrozen(before.messages)).toBe(true);
    expect(agent.state.tools.map((t) => t.name)).toEqual(["probe"]);
    const mine = [user("replaced")];
    agent.replaceMessages(mine);
    mine.push(user("later"));
    agent.setTools(tools);
    tools.pop();
    expect(texts(agent.state.messages)).toEqual(["user:replaced"]);
    expect(agent.state.tools.map((t) => t.name)).toEqual(["probe", "other"]);
    await agent.prompt("two");
    expect(texts(agent.state.messages)).toEqual(["user:replaced", "user:two", "assistant:b"]);
  }, 5000);

  it("Lab 9.3 · listeners are awaited one after another in subscription order; a slow one holds the run back", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("hi")]) } });
    const log: string[] = [];
    agent.subscribe(async (event) => {
      log.push(`A ${event.type} start`);
      await new Promise((r) => setTimeout(r, 2));
      log.push(`A ${event.type} end`);
    });
    agent.subscribe((event) => {
      log.push(`B ${event.type}`);
    });
    await agent.prompt("go");
    const types = [
      "agent_start",
      "turn_start",
      "message_start",
      "message_end",
      "message_start",
      "message_update",
      "message_end",
      "turn_end",
      "agent_end",
    ];
    expect(log).toEqual(types.flatMap((t) => [`A ${t} start`, `A ${t} end`, `B ${t}`]));
  }, 5000);

  it("Lab 9.3 · prompt() resolves only after agent_end reached every listener; waitForIdle() likewise, and at once when idle", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("hi")]) } });
    let delivered = false;
    agent.subscribe(async (event) => {
      if (event.type !== "agent_end") return;
      await new Promise((r) => setTimeout(r, 20));
      delivered = true;
    });
    await agent.waitForIdle();
    const running = agent.prompt("go");
    expect(agent.state.isStreaming).toBe(true);
    await agent.waitForIdle();
    expect(delivered).toBe(true);
    expect(agent.state.isStreaming).toBe(false);
    await running;
  }, 5000);

  it("Lab 9.3 · unsubscribe stops a listener from the next event on", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("hi"), says("again")]) } });
    const seen: string[] = [];
    const stop = agent.subscribe((event) => {
      seen.push(event.type);
      if (event.type === "message_end") stop();
    });
    await agent.prompt("go");
    await agent.prompt("more");
    expect(seen).toEqual(["agent_start", "turn_start", "message_start", "message_end"]);
  }, 5000);

  it("Lab 9.3 · a run at a time: prompt(), continue(), reset() and replaceMessages() are refused while running, with what to do", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("first"), says("second")]) } });
    const first = agent.prompt("one");
    expect((await rejectionOf(agent.prompt("two"))).message).toMatch(
      /busy.*steer\(\) or followUp\(\).*waitForIdle\(\)/,
    );
    expect((await rejectionOf(agent.continue())).message).toMatch(/busy.*waitForIdle\(\)/);
    expect(() => agent.reset()).toThrow(/busy.*abort\(\)/);
    expect(() => agent.replaceMessages([])).toThrow(/busy/);
    await first;
    expect(texts(agent.state.messages)).toEqual(["user:one", "assistant:first"]);
    await agent.prompt("two");
    expect(texts(agent.state.messages)).toEqual(["user:one", "assistant:first", "user:two", "assistant:second"]);
  }, 5000);

  it("Lab 9.3 · bad input is refused with a clear error and changes nothing", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("ok")]) } });
    await expect(agent.prompt([])).rejects.toThrow(/at least one message/);
    await expect(agent.prompt({ content: [] } as never)).rejects.toThrow(/no role.*userMessage/);
    expect(() => agent.steer(42 as never)).toThrow(/expected a message object/);
    expect(() => agent.setModel({} as never)).toThrow(/stream\(\)/);
    expect(() => new Agent({ maxTurns: 0 })).toThrow(/maxTurns/);
    expect(() => new Agent({ steeringMode: "each" as never })).toThrow(/"one-at-a-time" or "all"/);
    expect(agent.hasQueuedMessages()).toBe(false);
    await agent.prompt("fine");
    expect(texts(agent.state.messages)).toEqual(["user:fine", "assistant:ok"]);
  }, 5000);

  it("Lab 9.3 · an agent without a model ends its run with an error that says how to set one", async () => {
    const agent = new Agent();
    await agent.prompt("hello");
    expect(agent.state.errorMessage).toMatch(/no model.*setModel/);
    agent.setModel(scripted([says("now I can")]));
    await agent.continue();
    expect(texts(agent.state.messages)).toEqual(["user:hello", "assistant:", "assistant:now I can"]);
    expect(agent.state.errorMessage).toBeUndefined();
  }, 5000);

  it("Lab 9.3 · steer() is injected after the whole tool batch; a queued message is not in the transcript until then", async () => {
    const release = gate();
    const tool = probe(async () => {
      await release.promise;
      return textResult("ok");
    });
    const model = scripted([turn([call("c1"), call("c2")]), says("noted")]);
    const agent = new Agent({ initialState: { model, tools: [tool] } });
    const { events } = record(agent);
    const running = agent.prompt("go");
    await new Promise((r) => setTimeout(r, 5));
    const steer = user("use the other file");
    agent.steer(steer);
    expect(agent.hasQueuedMessages()).toBe(true);
    expect(agent.state.messages).not.toContain(steer);
    release.open();
    await running;
    const after = shape(events).slice(shape(events).indexOf("tool_execution_start:c1"));
    expect(after).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c1",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(agent.state.messages[4]).toBe(steer);
    expect(model.requests[1]!.messages.at(-1)).toEqual(steer);
    expect(agent.hasQueuedMessages()).toBe(false);
  }, 5000);

  it("Lab 9.3 · followUp() waits until the model would stop; one-at-a-time takes one per stop, all takes all", async () => {
    for (const mode of ["one-at-a-time", "all"] as const) {
      const model = scripted([says("a"), says("b"), says("c")]);
      const agent = new Agent({ initialState: { model }, followUpMode: mode });
      agent.followUp("f1");
      agent.followUp(user("f2"));
      await agent.prompt("go");
      const expected =
        mode === "one-at-a-time"
          ? ["user:go", "assistant:a", "user:f1", "assistant:b", "user:f2", "assistant:c"]
          : ["user:go", "assistant:a", "user:f1", "user:f2", "assistant:b"];
      expect(texts(agent.state.messages)).toEqual(expected);
      expect(agent.hasQueuedMessages()).toBe(false);
    }
  }, 5000);

  it("Lab 9.3 · maxTurns: the run stops after its last allowed model call, without an extra turn; queued follow-ups wait", async () => {
    const model = scripted([turn([call("c1")]), says("done"), says("after")]);
    const agent = new Agent({ initialState: { model, tools: [okTool] }, maxTurns: 1 });
    const { events } = record(agent);
    agent.followUp("later");
    await agent.prompt("go");
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toMatch(/^Turn limit reached\b.*maxTurns = 1/);
    expect(agent.hasQueuedMessages()).toBe(true);
    // continue() answers the tool result; its natural stop at the limit polls no queue either
    await agent.continue();
    expect(texts(agent.state.messages)).toEqual(["user:go", "assistant:", "toolResult:ok", "assistant:done"]);
    expect(agent.state.errorMessage).toBeUndefined();
    expect(agent.hasQueuedMessages()).toBe(true);
    expect(model.requests).toHaveLength(2);
  }, 5000);

  it("Lab 9.3 · steering waits for a whole batch per poll: one-at-a-time injects one per turn, all injects all at once", async () => {
    for (const mode of ["one-at-a-time", "all"] as const) {
      const model = scripted([says("a"), says("b"), says("c")]);
      const agent = new Agent({ initialState: { model }, steeringMode: mode });
      agent.steer("s1");
      agent.steer("s2");
      await agent.prompt("go");
      const expected =
        mode === "one-at-a-time"
          ? ["user:go", "assistant:a", "user:s1", "assistant:b", "user:s2", "assistant:c"]
          : ["user:go", "assistant:a", "user:s1", "user:s2", "assistant:b"];
      expect(texts(agent.state.messages)).toEqual(expected);
    }
  }, 5000);

  it("Lab 9.3 · clearing the queues hands the messages back; steer/followUp while idle wait for the next run", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("a"), says("b")]) } });
    agent.steer("s");
    agent.followUp("f");
    expect(agent.queuedMessages()).toEqual({
      steering: [expect.objectContaining({ role: "user" })],
      followUps: [expect.objectContaining({ role: "user" })],
    });
    const cleared = agent.clearAllQueues();
    expect(texts([...cleared.steering, ...cleared.followUps])).toEqual(["user:s", "user:f"]);
    expect(agent.hasQueuedMessages()).toBe(false);
    agent.followUp("later");
    expect(agent.clearSteering()).toEqual([]);
    await agent.prompt("go");
    expect(texts(agent.state.messages)).toEqual(["user:go", "assistant:a", "user:later", "assistant:b"]);
    expect(agent.clearFollowUps()).toEqual([]);
  }, 5000);

  it("Lab 9.3 · abort() during a tool: every call answered, no further model call, steering left queued; idle abort does nothing", async () => {
    const model = scripted([turn([call("c1"), call("c2")]), says("never")]);
    const tool = probe(
      (_id, _args, signal) =>
        new Promise((_, reject) => signal!.addEventListener("abort", () => reject(new Error("stopped")))),
    );
    const agent = new Agent({ initialState: { model, tools: [tool] } });
    const { runs } = record(agent);
    agent.subscribe((event) => {
      if (event.type === "tool_execution_start" && event.toolCallId === "c2") {
        agent.steer("too late for this run");
        agent.abort();
      }
    });
    await agent.prompt("go");
    expectWellFormed(runs());
    expect(model.requests).toHaveLength(1);
    expect(texts(agent.state.messages).slice(0, 2)).toEqual(["user:go", "assistant:"]);
    expect(
      agent.state.messages.filter((m) => m.role === "toolResult").map((m) => (m as { toolCallId: string }).toolCallId),
    ).toEqual(["c1", "c2"]);
    expect(agent.state.pendingToolCalls.size).toBe(0);
    expect(texts(agent.queuedMessages().steering)).toEqual(["user:too late for this run"]);
    agent.abort(); // idle: nothing happens
    expect(agent.state.isStreaming).toBe(false);
  }, 5000);

  it("Lab 9.3 · a steering message taken by the loop just before an abort is in the transcript, never lost nor doubled", async () => {
    const model = scripted([says("a"), says("never")]);
    const agent = new Agent({ initialState: { model } });
    const { runs } = record(agent);
    let turns = 0;
    agent.subscribe((event) => {
      if (event.type === "turn_end" && turns === 1) agent.steer("taken at the poll");
      // the poll happened between turn_end and this turn_start: abort now
      if (event.type === "turn_start" && ++turns === 2) agent.abort();
    });
    await agent.prompt("go");
    expectWellFormed(runs());
    expect(texts(agent.state.messages)).toEqual(["user:go", "assistant:a", "user:taken at the poll", "assistant:"]);
    expect((agent.state.messages[3] as AssistantMessage).stopReason).toBe("aborted");
    expect(agent.hasQueuedMessages()).toBe(false);
    expect(model.requests).toHaveLength(1);
  }, 5000);

  it("Lab 9.3 · upstream bug: prompt() after an aborted run works, and the next run is clean", async () => {
    const model = scripted([says("a long answer that gets cut off"), says("fresh")]);
    const agent = new Agent({ initialState: { model } });
    let abortOnce = true;
    agent.subscribe((event) => {
      if (event.type === "message_update" && abortOnce) {
        abortOnce = false;
        agent.abort();
      }
    });
    await agent.prompt("one");
    expect(agent.state.errorMessage).toMatch(/abort/i);
    expect((agent.state.messages[1] as AssistantMessage).stopReason).toBe("aborted");
    await agent.prompt("two");
    expect(texts(agent.state.messages).slice(-2)).toEqual(["user:two", "assistant:fresh"]);
    expect(agent.state.errorMessage).toBeUndefined();
    // the aborted turn is not in the model's view
    expect(model.requests[1]!.messages.map((m) => m.role)).toEqual(["user", "user"]);
  }, 5000);

  it("Lab 9.3 · an aborted message has errorDetails { kind: aborted }, whoever saw the abort first (the model, the loop, or no model call yet)", async () => {
    const aborted = { kind: "aborted", retryable: false };
    // The scripted model sees the signal itself.
    const chatty = new Agent({ initialState: { model: scripted([says("a long answer that gets cut off")]) } });
    const stop = chatty.subscribe((event) => {
      if (event.type === "message_update") {
        stop();
        chatty.abort();
      }
    });
    await chatty.prompt("one");
    expect(chatty.state.messages[1]).toMatchObject({ stopReason: "aborted", errorDetails: aborted });

    // A model that ignores the signal: the loop stops waiting and ends the turn itself.
    const deaf: Model = {
      provider: "deaf",
      id: "deaf",
      stream() {
        const stream = new AssistantMessageEventStream();
        stream.push({ type: "start", partial: assistantMessage([], "stop") });
        return stream;
      },
    };
    const waiting = new Agent({ initialState: { model: deaf } });
    waiting.subscribe((event) => {
      if (event.type === "message_start" && event.message.role === "assistant") waiting.abort();
    });
    await waiting.prompt("two");
    expect(waiting.state.messages[1]).toMatchObject({ stopReason: "aborted", errorDetails: aborted });

    // Aborted between turns: the loop ends the run before the model is called.
    const between = new Agent({
      initialState: { model: scripted([turn([call("c1")]), says("never")]), tools: [okTool] },
    });
    let turns = 0;
    between.subscribe((event) => {
      if (event.type === "turn_start" && ++turns === 2) between.abort();
    });
    await between.prompt("three");
    expect(between.state.messages.at(-1)).toMatchObject({ stopReason: "aborted", errorDetails: aborted });
  }, 5000);

  it("Lab 9.3 · a throwing listener ends the run well formed, later listeners still run, prompt() rejects naming it", async () => {
    const model = scripted([turn([call("c1")]), says("never")]);
    const agent = new Agent({ initialState: { model, tools: [okTool] } });
    const failing: string[] = [];
    agent.subscribe((event) => {
      failing.push(event.type);
      if (event.type === "tool_execution_start") throw new Error("listener bug");
    });
    const { events, runs } = record(agent);
    const error = await rejectionOf(agent.prompt("go"));
    expect(error).toBeInstanceOf(AgentListenerError);
    expect(error.message).toMatch(/listener threw on "tool_execution_start": listener bug/);
    expect((error as AgentListenerError).failures).toHaveLength(1);
    expect(agent.state.isStreaming).toBe(false);
    expect(agent.state.errorMessage).toBe(error.message);
    expectWellFormed(runs());
    expect(events.map((e) => e.type)).toEqual(failing); // the later listener got every event too, once
    expect(model.requests).toHaveLength(1); // the run stopped: no second model call
    expect(agent.state.pendingToolCalls.size).toBe(0);
    await agent.waitForIdle();
  }, 5000);

  it("Lab 9.3 · a listener rejecting on agent_end: the agent is idle, prompt() rejects, the next prompt works", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("a"), says("b")]) } });
    let fail = true;
    agent.subscribe(async (event) => {
      if (event.type === "agent_end" && fail) throw new Error("late bug");
    });
    const error = await rejectionOf(agent.prompt("one"));
    expect(error.message).toMatch(/"agent_end": late bug/);
    expect(agent.state.isStreaming).toBe(false);
    fail = false;
    await agent.prompt("two");
    expect(texts(agent.state.messages)).toEqual(["user:one", "assistant:a", "user:two", "assistant:b"]);
    expect(agent.state.errorMessage).toBeUndefined();
  }, 5000);

  it("Lab 9.3 · upstream bug: a throwing model or convertToLlm never leaves isStreaming true nor waitForIdle() pending", async () => {
    const throwing: Model = {
      provider: "bad",
      id: "bad",
      stream() {
        throw new Error("model exploded");
      },
    };
    const a = new Agent({ initialState: { model: throwing } });
    await a.prompt("go");
    expect(a.state.isStreaming).toBe(false);
    expect(a.state.errorMessage).toMatch(/model exploded/);
    await a.waitForIdle();
    const b = new Agent({
      initialState: { model: scripted([says("never")]) },
      convertToLlm: () => {
        throw new Error("cannot convert");
      },
    });
    const { runs } = record(b);
    await b.prompt("go");
    expect(b.state.isStreaming).toBe(false);
    expect(b.state.errorMessage).toMatch(/convertToLlm failed: cannot convert/);
    expectWellFormed(runs());
    await b.waitForIdle();
  }, 5000);

  it("Lab 9.3 · upstream bug: a tool_execution_update after that call's end never reaches state or listeners", async () => {
    let late: (() => void) | undefined;
    const tool = probe(async (_id, _args, _signal, onUpdate) => {
      onUpdate?.(textResult("working"));
      late = () => onUpdate?.(textResult("too late"));
      return textResult("ok");
    });
    const agent = new Agent({ initialState: { model: scripted([turn([call("c1")]), says("done")]), tools: [tool] } });
    const { events, runs } = record(agent);
    agent.subscribe((event) => {
      if (event.type === "tool_execution_end") late?.();
    });
    await agent.prompt("go");
    late?.();
    expectWellFormed(runs());
    const updates = events.filter((e) => e.type === "tool_execution_update");
    expect(
      updates.map((e) =>
        e.type === "tool_execution_update" ? textOf({ ...e.partialResult, role: "user", timestamp: 0 } as Message) : "",
      ),
    ).toEqual(["working"]);
    expect(agent.state.pendingToolCalls.size).toBe(0);
  }, 5000);

  it("Lab 9.3 · continue() resumes from the transcript; an assistant tail takes one steering batch, else one follow-up, else throws", async () => {
    const model = scripted([says("one"), says("two"), says("three")]);
    const agent = new Agent({ initialState: { model, messages: [user("hi")] } });
    await agent.continue();
    expect(texts(agent.state.messages)).toEqual(["user:hi", "assistant:one"]);
    expect((await rejectionOf(agent.continue())).message).toMatch(/ends with an assistant message.*prompt\(\)/);
    agent.followUp("f");
    agent.steer("s");
    await agent.continue();
    expect(texts(agent.state.messages).slice(2)).toEqual(["user:s", "assistant:two", "user:f", "assistant:three"]);
    expect(model.requests).toHaveLength(3);
  }, 5000);

  it("Lab 9.3 · reset() clears transcript, queues and error, keeps model and tools", async () => {
    const agent = new Agent({
      initialState: { model: scripted([{ stopReason: "error", errorMessage: "503" }, says("ok")]), tools: [okTool] },
    });
    await agent.prompt("go");
    expect(agent.state.errorMessage).toMatch(/503/);
    agent.steer("s");
    agent.reset();
    expect(agent.state.messages).toEqual([]);
    expect(agent.state.errorMessage).toBeUndefined();
    expect(agent.hasQueuedMessages()).toBe(false);
    expect(agent.state.tools).toEqual([okTool]);
    await agent.prompt("again");
    expect(texts(agent.state.messages)).toEqual(["user:again", "assistant:ok"]);
  }, 5000);

  it("Lab 9.3 · agent.state.messages is a new array only when a message ends; other events and the run's start and end keep it", async () => {
    const agent = new Agent({ initialState: { model: scripted([says("hi")]) } });
    const before = agent.state.messages;
    const seen: string[] = [];
    let last = before;
    agent.subscribe((event) => {
      const now = agent.state.messages;
      seen.push(`${event.type}: ${now === last ? "same" : "new"}`);
      last = now;
    });
    await agent.prompt("hello");
    expect(seen).toEqual([
      "agent_start: same",
      "turn_start: same",
      "message_start: same",
      "message_end: new",
      "message_start: same",
      "message_update: same",
      "message_end: new",
      "turn_end: same",
      "agent_end: same",
    ]);
    expect(agent.state.messages, "the run's end changed no message").toBe(last);
  }, 5000);
});
