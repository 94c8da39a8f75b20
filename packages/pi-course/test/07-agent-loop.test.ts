import { checkRejectionsPerTest } from "./support/leaks.js";
import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import {
  AssistantMessageEventStream,
  ScriptedModel,
  agentLoop,
  agentLoopContinue,
  assistantMessage,
  defineTool,
  textOf,
  toToolDefinition,
  toolResultMessage,
  userMessage,
} from "../src/index.js";
import type {
  AfterToolCallResult,
  AgentContext,
  AgentEvent,
  AgentLoopConfig,
  AgentMessage,
  AssistantMessage,
  BeforeToolCallResult,
  Message,
  Model,
  ToolCall,
  ToolResultMessage,
} from "../src/index.js";
import { streamAssistantMessage } from "../src/agent/agent-loop.js";
import { LoopRun } from "../src/agent/loop-run.js";
import { constructionSiteError, finish, gate, grammarViolations, shape, textResult } from "./support/agent-run.js";
import type { AnyTool, FinishedRun } from "./support/agent-run.js";
import { call, says, scripted, text, turn } from "./support/messages.js";

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/**
 * For the tests of the loop's validation: the script plays unknown, invalid and coercible calls on
 * purpose, so ScriptedModel's own check of scripted calls is turned off.
 */
const sloppy = (turns: ConstructorParameters<typeof ScriptedModel>[0]) =>
  new ScriptedModel(turns, { chunkSize: 10_000, checkToolCalls: false });

function readTool(log: string[] = []): AnyTool {
  return defineTool({
    name: "read",
    label: "Read",
    description: "Reads a file.",
    parameters: Type.Object({ path: Type.String() }),
    async execute(id, { path }) {
      log.push(`read ${id} ${path}`);
      return { content: [{ type: "text", text: `contents of ${path}` }], details: { path } };
    },
  });
}

const addTool: AnyTool = defineTool({
  name: "add",
  label: "Add",
  description: "Adds two numbers.",
  parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
  async execute(_id, { a, b }) {
    return textResult(String(a + b));
  },
});

/** A tool whose behaviour each test scripts. */
function probe(name: string, execute: AnyTool["execute"], extra: Partial<AnyTool> = {}): AnyTool {
  return { name, label: name, description: `the ${name} tool`, parameters: Type.Object({}), execute, ...extra };
}

const ctx = (tools: AnyTool[] = [], messages: AgentMessage[] = []): AgentContext => ({
  systemPrompt: "You are terse.",
  messages,
  tools,
});

/** Runs a loop to the end and asserts the lifecycle grammar and the pairing invariant. */
async function run(
  prompt: string | AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  options: { signal?: AbortSignal; onEvent?: (event: AgentEvent) => void | Promise<void> } = {},
): Promise<FinishedRun> {
  const prompts = typeof prompt === "string" ? [userMessage(prompt)] : prompt;
  const finished = await finish(agentLoop(prompts, context, config, options.signal), options.onEvent);
  expect(grammarViolations(finished.events, finished.result)).toEqual([]);
  return finished;
}

/**
 * Lab 7.1 alone: one turn through `streamAssistantMessage`, reported by the smallest loop there
 * is (agent_start, turn_start, the prompts, the turn, turn_end, agent_end), written here so that
 * `runLoop` (Lab 7.2) is not needed yet. Asserts the grammar; fails after 5 s instead of hanging.
 */
async function oneTurn(
  prompt: string | AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
): Promise<FinishedRun> {
  const prompts = typeof prompt === "string" ? [userMessage(prompt)] : prompt;
  const events: AgentEvent[] = [];
  const played = new LoopRun(context, config, (event) => void events.push(event), undefined).run(
    prompts,
    async (turn, pending) => {
      await turn.emit({ type: "agent_start" });
      await turn.emit({ type: "turn_start" });
      for (const message of pending) await turn.add(message);
      await turn.endTurn(await streamAssistantMessage(turn), []);
      await turn.finish();
    },
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the turn did not end within 5000 ms; events so far: ${shape(events).join(", ")}`)),
      5000,
    );
  });
  const result = await Promise.race([played, deadline]).finally(() => clearTimeout(timer));
  const site = constructionSiteError(result);
  if (site !== undefined) throw new Error(site);
  expect(grammarViolations(events, result)).toEqual([]);
  return { events, result };
}

/**
 * A tool_execution_end as the tests compare it: the loop may copy the result with `isError:
 * false` or `terminate: false` spelled out where the tool left them out; both mean the same.
 */
const loose = (event: AgentEvent): AgentEvent => {
  if (event.type !== "tool_execution_end") return event;
  const result = { ...event.result };
  if (result.isError === false) delete result.isError;
  if (result.terminate === false) delete result.terminate;
  return { ...event, result };
};

const resultsOf = (events: AgentEvent[]): ToolResultMessage[] =>
  events.flatMap((e) => (e.type === "message_end" && e.message.role === "toolResult" ? [e.message] : []));
/** The shape from the first tool_execution_start on. */
const fromBatch = (events: AgentEvent[]): string[] => {
  const all = shape(events);
  return all.slice(all.findIndex((type) => type.startsWith("tool_execution_start")));
};
const lastAssistant = (result: AgentMessage[]): AssistantMessage =>
  result.filter((m): m is AssistantMessage => m.role === "assistant").at(-1)!;

// Any rejection left unhandled by a test fails that test, named by the rejection's stack (support/leaks.ts).
checkRejectionsPerTest(import.meta.url);

const TURN_ONE_TOOL = [
  "agent_start",
  "turn_start",
  "message_start:user",
  "message_end:user",
  "message_start:assistant",
  "message_update:toolcall_delta",
  "message_update:toolcall_end",
  "message_end:assistant",
];

// ---------------------------------------------------------------------------------------------

describe("chapter 07 · the agent loop", () => {
  // -------------------------------------------------------------------------------------------
  // Lab 7.1 · one turn, alone: streamAssistantMessage (model events as message events, failures as error messages)
  // -------------------------------------------------------------------------------------------

  it("Lab 7.1 · a text turn: message_start, one update per model event, message_end; result = new messages", async () => {
    const model = new ScriptedModel([says("Hello there")], { chunkSize: 5 });
    const prompt = userMessage("hi");
    const { events, result } = await oneTurn([prompt], ctx(), { model });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:text_delta",
      "message_update:text_delta",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const updates = events.filter((e) => e.type === "message_update");
    expect(updates.map((e) => (e.event.type === "text_delta" ? e.event.delta : ""))).toEqual(["Hello", " ther", "e"]);
    expect(result).toHaveLength(2);
    expect(result[0]).toBe(prompt);
    expect(textOf(result[1] as Message)).toBe("Hello there");
    expect(model.requests[0]).toEqual({ systemPrompt: "You are terse.", messages: [prompt] });
  });

  it("Lab 7.1 · the model sees the system prompt, the tools' definitions and only canonical messages", async () => {
    const read = readTool();
    const model = scripted([says("ok")]);
    const note = { role: "note", text: "internal", timestamp: 1 } as unknown as AgentMessage;
    await oneTurn("go", ctx([read], [note]), { model });
    expect(model.requests[0]!.tools).toEqual([toToolDefinition(read)]);
    expect(model.requests[0]!.messages.map((m) => m.role)).toEqual(["user"]);
  });

  it("Lab 7.1 · a custom message type is converted by convertToLlm, or dropped by the default", async () => {
    const note = { role: "note", text: "the user prefers tabs", timestamp: 1 } as unknown as AgentMessage;
    const convertToLlm = (messages: AgentMessage[]): Message[] =>
      messages.map((m) =>
        (m as { role: string }).role === "note"
          ? userMessage(`Note: ${(m as unknown as { text: string }).text}`, { timestamp: 1 })
          : (m as Message),
      );
    const converted = scripted([says("ok")]);
    const { events } = await oneTurn([note, userMessage("go")], ctx(), { model: converted, convertToLlm });
    // custom messages are still reported and kept in the transcript
    expect(shape(events).slice(0, 6)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:note",
      "message_end:note",
      "message_start:user",
      "message_end:user",
    ]);
    expect(converted.requests[0]!.messages.map((m) => textOf(m))).toEqual(["Note: the user prefers tabs", "go"]);
    const dropped = scripted([says("ok")]);
    await oneTurn([note, userMessage("go")], ctx(), { model: dropped });
    expect(dropped.requests[0]!.messages.map((m) => textOf(m))).toEqual(["go"]);
  });

  it("Lab 7.1 · transformContext prunes what the model sees, never the transcript", async () => {
    const model = scripted([says("ok")]);
    const old = [userMessage("old 1"), says("old answer"), userMessage("old 2")];
    const context = ctx([], old);
    const { result } = await oneTurn("new", context, {
      model,
      transformContext: (messages) => messages.slice(-1),
    });
    expect(model.requests[0]!.messages.map((m) => textOf(m))).toEqual(["new"]);
    expect(result.map((m) => textOf(m as Message))).toEqual(["new", "ok"]);
    expect(context.messages).toHaveLength(3); // the caller's context is not changed
  });

  it("Lab 7.1 · invariant: a throw from the model's stream() ends the run well formed, no unhandled rejection, no hang (pi-agent-core 1.6 hangs here)", async () => {
    const model: Model = {
      provider: "broken",
      id: "broken-1",
      stream() {
        throw new Error("socket gone");
      },
    };
    const { events, result } = await oneTurn("go", ctx(), { model });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const error = lastAssistant(result);
    expect(error).toMatchObject({ stopReason: "error", provider: "broken", model: "broken-1", content: [] });
    expect(error.errorMessage).toContain("socket gone");
  });

  it("Lab 7.1 · invariant: a stream that ends without a final message becomes an error message keeping its partial", async () => {
    const model: Model = {
      provider: "p",
      id: "m",
      stream() {
        const stream = new AssistantMessageEventStream();
        const partial = assistantMessage([text("half")], "stop");
        queueMicrotask(() => {
          stream.push({ type: "start", partial });
          stream.push({ type: "text_delta", contentIndex: 0, delta: "half", partial });
          stream.end();
        });
        return stream;
      },
    };
    const { events, result } = await oneTurn("go", ctx(), { model });
    expect(shape(events).slice(4)).toEqual([
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(lastAssistant(result)).toMatchObject({ stopReason: "error", content: [text("half")] });
  });

  it("Lab 7.1 · invariant: a malformed final message (content not an array, unknown stopReason) becomes one error message in its turn", async () => {
    const malformed = { ...says("x"), content: "not an array" } as unknown as AssistantMessage;
    const withStart: Model = {
      provider: "hand",
      id: "hand-written",
      stream() {
        const stream = new AssistantMessageEventStream();
        setImmediate(() => {
          stream.push({ type: "start", partial: malformed });
          stream.push({ type: "done", reason: "stop", message: malformed });
        });
        return stream;
      },
    };
    const oddStop = { ...says("x"), stopReason: "finished" } as unknown as AssistantMessage;
    const withoutStart: Model = {
      provider: "hand",
      id: "hand-written",
      stream() {
        const events = [{ type: "done", reason: "stop", message: oddStop }];
        return {
          async *[Symbol.asyncIterator]() {
            yield* events;
          },
          result: async () => oddStop,
        } as unknown as AssistantMessageEventStream;
      },
    };
    const cases: [Model, string][] = [
      [withStart, "its content is not an array"],
      [withoutStart, 'its stopReason "finished" is not one of stop, length, toolUse, error, aborted'],
    ];
    for (const [model, problem] of cases) {
      const { events, result } = await oneTurn("go", ctx(), {
        model,
        getFollowUpMessages: () => [userMessage("more")],
      });
      expect(shape(events)).toEqual([
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
      ]);
      expect(result).toHaveLength(2);
      expect(lastAssistant(result)).toMatchObject({
        stopReason: "error",
        content: [],
        errorMessage: `The model ended its turn without a well-formed assistant message: ${problem}.`,
      });
    }
  });

  it("Lab 7.1 · invariant: a throw from convertToLlm or transformContext ends the run well formed, without calling the model (pi-agent-core 1.6 hangs here)", async () => {
    for (const config of [
      {
        convertToLlm: () => {
          throw new Error("cannot convert");
        },
      },
      { transformContext: async () => Promise.reject(new Error("cannot prune")) },
    ] satisfies Partial<AgentLoopConfig>[]) {
      const model = scripted([says("never")]);
      const { events, result } = await oneTurn("go", ctx(), { model, ...config });
      expect(shape(events)).toEqual([
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
      ]);
      expect(model.requests, "model calls (the model must not be called at all)").toHaveLength(0);
      expect(lastAssistant(result).errorMessage).toMatch(
        /^(convertToLlm failed: cannot convert|transformContext failed: cannot prune)$/,
      );
    }
  });

  // -------------------------------------------------------------------------------------------
  // Lab 7.2 · the loop: runLoop (turns, injected messages, after-turn decisions, queues, turn limit, abort)
  // -------------------------------------------------------------------------------------------

  it("Lab 7.2 · invariant: a loop that throws before agent_start still ends well formed, agent_start first", async () => {
    // LoopRun's fallback (given code), as an unfinished runLoop reaches it
    const events: AgentEvent[] = [];
    const fallback = await new LoopRun(
      ctx(),
      { model: scripted([]) },
      (event) => void events.push(event),
      undefined,
    ).run([], async () => {
      throw new Error("loop broke");
    });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:assistant",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(grammarViolations(events, fallback)).toEqual([]);
    expect(lastAssistant(fallback).errorMessage).toBe("The agent loop failed: loop broke");
    // the loop itself, when reading its config throws before the run has started
    let reads = 0;
    const config = {
      model: scripted([says("never")]),
      get maxTurns(): number {
        if (reads++ > 0) throw new Error("config broke");
        return 5;
      },
    };
    const { events: loopEvents, result } = await run("go", ctx(), config);
    expect(lastAssistant(result).errorMessage).toBe("The agent loop failed: config broke");
    expect(shape(loopEvents)[0]).toBe("agent_start");
  });

  it("Lab 7.2 · invariant: an error turn keeps its partial text, runs no tools and ends the run", async () => {
    let executed = 0;
    const tool = probe("t", async () => {
      executed++;
      return textResult("ran");
    });
    const model = scripted([
      assistantMessage([text("Let me"), call("c1", "t")], "error", { errorMessage: "connection reset" }),
    ]);
    const { events, result } = await run("go", ctx([tool]), { model });
    expect(shape(events)).toEqual([
      ...TURN_ONE_TOOL.slice(0, 5),
      "message_update:text_delta",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(executed).toBe(0);
    expect(lastAssistant(result)).toMatchObject({ stopReason: "error", errorMessage: "connection reset" });
  });

  it("Lab 7.2 · a follow-up after a natural stop starts another turn; none ends the run", async () => {
    const followUps = [[userMessage("and the tests?")], []];
    let steeringPolls = 0;
    const model = scripted([says("main.ts prints hello"), says("they pass")]);
    const { events, result } = await run("what does main.ts do?", ctx(), {
      model,
      getSteeringMessages: () => {
        steeringPolls++;
        return [];
      },
      getFollowUpMessages: () => followUps.shift() ?? [],
    });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
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
    expect(result.map((m) => textOf(m as Message))).toEqual([
      "what does main.ts do?",
      "main.ts prints hello",
      "and the tests?",
      "they pass",
    ]);
    expect(steeringPolls).toBe(2);
    expect(followUps).toEqual([]);
  });

  it("Lab 7.2 · invariant: a throw from a queue getter ends the run well formed", async () => {
    for (const config of [
      { getSteeringMessages: () => Promise.reject(new Error("queue broke")) },
      {
        getFollowUpMessages: () => {
          throw new Error("queue broke");
        },
      },
    ] satisfies Partial<AgentLoopConfig>[]) {
      const model = scripted([says("hello"), says("never")]);
      const { events, result } = await run("go", ctx(), { model, ...config });
      expect(shape(events).slice(-6)).toEqual([
        "turn_end",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
      ]);
      expect(lastAssistant(result).errorMessage).toMatch(/^get(Steering|FollowUp)Messages failed: queue broke$/);
      expect(
        model.requests,
        "model calls (one more means the model was called again after the run should have ended)",
      ).toHaveLength(1);
    }
  });

  it("Lab 7.2 · the turn limit: the turn of the last allowed model call is the last turn; no queue is polled after it", async () => {
    const polls: string[] = [];
    const model = scripted([says("one"), says("two"), says("never")]);
    const { events, result } = await run("go", ctx(), {
      model,
      maxTurns: 2,
      getSteeringMessages: () => (polls.push("steering"), []),
      getFollowUpMessages: () => (polls.push("followUp"), [userMessage("more")]),
    });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
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
    // a natural stop at the limit is no error; queued messages stay queued for the next run
    expect(events.at(-1)).toEqual({ type: "agent_end", messages: result });
    expect(polls, "polled after the last allowed turn").toEqual(["steering", "followUp"]);
    expect(model.requests, "the model was called past maxTurns").toHaveLength(2);
    expect(() => agentLoop([], ctx(), { model, maxTurns: 0 })).toThrow(/maxTurns/);
  });

  it("Lab 7.2 · invariant: abort while streaming ends the turn as aborted; no model call after", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel([says("a long answer that will be cut"), says("never")], { chunkSize: 2 });
    const { events, result } = await run(
      "go",
      ctx(),
      { model, getFollowUpMessages: () => [userMessage("more")] },
      {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === "message_update") controller.abort();
        },
      },
    );
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(lastAssistant(result)).toMatchObject({ stopReason: "aborted", content: [text("a ")] });
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.2 · invariant: an abort during a queue poll: nothing more is dequeued, nothing dequeued is lost", async () => {
    // found by the soak: an abort inside getSteeringMessages used to let the follow-up queue be polled
    for (const steer of [[], [userMessage("steer")]]) {
      const controller = new AbortController();
      let followUpPolls = 0;
      const model = scripted([says("one"), says("never")]);
      const { events, result } = await run(
        "go",
        ctx(),
        {
          model,
          getSteeringMessages: () => {
            controller.abort();
            return steer;
          },
          getFollowUpMessages: () => {
            followUpPolls++;
            return [userMessage("follow")];
          },
        },
        { signal: controller.signal },
      );
      expect(followUpPolls, "getFollowUpMessages polled after the abort (polled means dequeued)").toBe(0);
      expect(
        model.requests,
        "model calls (one more means the model was called again after the run should have ended)",
      ).toHaveLength(1);
      if (steer.length === 0) {
        expect(shape(events).slice(-2)).toEqual(["turn_end", "agent_end"]);
      } else {
        // the dequeued steering message is kept, in a turn that ends as aborted without a model call
        expect(shape(events).slice(-7)).toEqual([
          "turn_start",
          "message_start:user",
          "message_end:user",
          "message_start:assistant",
          "message_end:assistant",
          "turn_end",
          "agent_end",
        ]);
        expect(result.at(-2)).toBe(steer[0]);
        expect(lastAssistant(result)).toMatchObject({
          stopReason: "aborted",
          errorMessage: "The run was aborted before the model was called.",
        });
      }
    }
  });

  it("Lab 7.2 · an already-aborted signal: no model call at all", async () => {
    const controller = new AbortController();
    controller.abort();
    const model = scripted([says("never")]);
    const { events, result } = await run("go", ctx(), { model }, { signal: controller.signal });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(lastAssistant(result).stopReason).toBe("aborted");
    expect(model.requests, "model calls (the model must not be called at all)").toHaveLength(0);
  });

  it("Lab 7.2 · agentLoopContinue answers from the transcript as it stands; refuses nothing-to-answer", async () => {
    const transcript: AgentMessage[] = [
      userMessage("read a"),
      turn([call("c1", "read", { path: "a" })]),
      toolResultMessage({ toolCallId: "c1", toolName: "read", content: "A" }),
    ];
    const model = scripted([says("a says A")]);
    const { events, result } = await finish(agentLoopContinue(ctx([readTool()], transcript), { model }));
    expect(grammarViolations(events, result)).toEqual([]);
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(result).toHaveLength(1);
    expect(model.requests[0]!.messages).toHaveLength(3);
    expect(() => agentLoopContinue(ctx([], []), { model })).toThrow(/empty/);
    expect(() => agentLoopContinue(ctx([], [says("hi")]), { model })).toThrow(/ends with an assistant message/);
    // agentLoop without prompts is a continuation: refused the same way, never a call with no messages
    const calls = model.requests.length;
    expect(() => agentLoop([], ctx([], []), { model })).toThrow(
      /^agentLoop: no prompts and an empty transcript.*Pass the prompt/,
    );
    expect(() => agentLoop([], ctx([], [says("hi")]), { model })).toThrow(
      /^agentLoop: no prompts, and the transcript ends with an assistant message/,
    );
    expect(model.requests.length).toBe(calls);
  });

  // -------------------------------------------------------------------------------------------
  // Lab 7.3 · tool batches: every call answered exactly once (executeToolBatch, prepareCall, runPreparedCall)
  // -------------------------------------------------------------------------------------------

  it("Lab 7.3 · convertToLlm gets a copy: emptying its input changes neither the transcript nor the next turn", async () => {
    const model = scripted([turn([call("c1", "read", { path: "a" })]), says("done")]);
    const { result } = await run("go", ctx([readTool()]), {
      model,
      convertToLlm: (messages) => {
        const view = messages.slice() as Message[];
        messages.length = 0; // a careless hook
        return view;
      },
    });
    expect(model.requests.map((r) => r.messages.map((m) => m.role))).toEqual([
      ["user"],
      ["user", "assistant", "toolResult"],
    ]);
    expect(result.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
  });

  it('Lab 7.3 · a "read main.ts" run (one tool call, then the answer): exactly these 19 events', async () => {
    const log: string[] = [];
    const model = scripted([turn([call("call_1", "read", { path: "main.ts" })]), says("main.ts prints hello")]);
    const prompt = userMessage("Read main.ts");
    const { events, result } = await run([prompt], ctx([readTool(log)]), { model });
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "tool_execution_start:call_1",
      "tool_execution_end:call_1",
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
    expect(events).toHaveLength(19);
    expect(log).toEqual(["read call_1 main.ts"]);
    expect(events[8]).toEqual({
      type: "tool_execution_start",
      toolCallId: "call_1",
      toolName: "read",
      args: { path: "main.ts" },
    });
    expect(loose(events[9]!)).toEqual({
      type: "tool_execution_end",
      toolCallId: "call_1",
      toolName: "read",
      result: { content: [{ type: "text", text: "contents of main.ts" }], details: { path: "main.ts" } },
      isError: false,
    });
    const [toolResult] = resultsOf(events);
    expect(toolResult).toMatchObject({
      role: "toolResult",
      toolCallId: "call_1",
      toolName: "read",
      isError: false,
      details: { path: "main.ts" },
    });
    expect(result.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(model.requests[1]!.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
  });

  it("Lab 7.3 · invariant: a length turn executes nothing and asks the model to re-issue each call", async () => {
    const log: string[] = [];
    const model = scripted([
      turn([call("c1", "read", { path: "a.ts" }), call("c2", "read", { path: "b.ts" })], "length"),
      turn([call("c3", "read", { path: "a.ts" })]),
      says("done"),
    ]);
    const { events } = await run("go", ctx([readTool(log)]), { model });
    expect(shape(events).slice(0, 18)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_delta",
      "message_end:assistant",
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
    ]);
    const [r1, r2] = resultsOf(events);
    for (const r of [r1!, r2!]) {
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain("Re-issue the call with complete arguments");
    }
    expect(log).toEqual(["read c3 a.ts"]);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(3);
  });

  it("Lab 7.3 · terminate, unanimous: the batch ends the run, no further model call", async () => {
    const finalTool = probe("final", async () => ({ ...textResult("bye"), terminate: true }));
    const model = scripted([turn([call("c1", "final"), call("c2", "final")]), says("never")]);
    const { events } = await run("go", ctx([finalTool]), { model });
    expect(fromBatch(events)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c1",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ]);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.3 · terminate, mixed: one result without terminate keeps the run going", async () => {
    const finalTool = probe("final", async () => ({ ...textResult("bye"), terminate: true }));
    const model = scripted([turn([call("c1", "final"), call("c2", "read", { path: "x" })]), says("done")]);
    const { events } = await run("go", ctx([finalTool, readTool()]), { model });
    expect(shape(events).slice(-7)).toEqual([
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(2);
  });

  it("Lab 7.3 · steering queued during a batch is injected after the whole batch, before the next model call", async () => {
    const queue: AgentMessage[] = [];
    const steer = userMessage("actually, stop after this");
    const slow = probe("slow", async () => {
      queue.push(steer); // the user types while tools run
      await new Promise((resolve) => setImmediate(resolve));
      return textResult("slow done");
    });
    const model = scripted([turn([call("c1", "slow"), call("c2", "read", { path: "x" })]), says("stopping")]);
    let polls = 0;
    const { events } = await run("go", ctx([slow, readTool()]), {
      model,
      getSteeringMessages: () => {
        polls++;
        return queue.splice(0);
      },
    });
    expect(fromBatch(events)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "tool_execution_end:c1",
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
    expect(model.requests[1]!.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "user",
    ]);
    expect(model.requests[1]!.messages.at(-1)).toEqual(steer);
    expect(polls).toBe(2);
  });

  it("Lab 7.3 · the turn limit with tool calls: their results are recorded, no model call answers them, agent_end says so", async () => {
    const model = scripted([
      turn([call("c1", "read", { path: "a" })]),
      turn([call("c2", "read", { path: "b" })]),
      says("never"),
    ]);
    const limited = await run("go", ctx([readTool()]), { model, maxTurns: 2 });
    expect(shape(limited.events)).toEqual([
      ...TURN_ONE_TOOL,
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update:toolcall_delta",
      "message_update:toolcall_end",
      "message_end:assistant",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ]);
    expect(model.requests, "the model was called past maxTurns").toHaveLength(2);
    expect(limited.result.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "toolResult"]);
    const end = limited.events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
    expect(end.errorMessage).toMatch(/^Turn limit reached\b/);
    expect(end.errorMessage).toContain("maxTurns = 2");
    expect(end.errorMessage).toContain("agentLoopContinue");
  });

  it("Lab 7.3 · invariant: abort during preparation (in prepareArguments) answers every call; no model call after", async () => {
    const controller = new AbortController();
    let executed = 0;
    const tool = probe(
      "t",
      async () => {
        executed++;
        return textResult("ran");
      },
      {
        prepareArguments: (args) => {
          controller.abort(); // e.g. the user pressed Esc while arguments were being repaired
          return args;
        },
      },
    );
    const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
    const { events } = await run("go", ctx([tool]), { model }, { signal: controller.signal });
    const answers = [
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ];
    // c1 answered when its execution would start, or by an abort check right after its preparation: both are fine
    expect([
      [
        "tool_execution_start:c1",
        "tool_execution_start:c2",
        "tool_execution_end:c2",
        "tool_execution_end:c1",
        ...answers,
      ],
      [
        "tool_execution_start:c1",
        "tool_execution_end:c1",
        "tool_execution_start:c2",
        "tool_execution_end:c2",
        ...answers,
      ],
    ]).toContainEqual(fromBatch(events));
    expect(executed).toBe(0);
    expect(resultsOf(events).every((r) => r.isError && textOf(r).includes("aborted"))).toBe(true);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.3 · invariant: abort during execution pairs every call at once, even with a tool that ignores the signal; no model call after (pi-agent-core 1.6 calls it once more)", async () => {
    const controller = new AbortController();
    const honest = probe(
      "honest",
      (_id, _args, signal) =>
        new Promise((_, reject) => signal?.addEventListener("abort", () => reject(new Error("stopped")))),
    );
    const deaf = probe("deaf", () => new Promise(() => {})); // never settles
    const model = scripted([turn([call("c1", "honest"), call("c2", "deaf")]), says("never")]);
    const { events } = await run(
      "go",
      ctx([honest, deaf]),
      { model },
      {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === "tool_execution_start" && event.toolCallId === "c2")
            setImmediate(() => controller.abort());
        },
      },
    );
    expect(fromBatch(events)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c1",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ]);
    expect(resultsOf(events).every((r) => r.isError && textOf(r).includes("aborted"))).toBe(true);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.3 · the stream's abort() stops the run; breaking out alone only stops the reading", async () => {
    const slow = probe(
      "slow",
      (_id, _params, signal) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve(textResult("done")), 200);
          signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve(textResult("stopped"));
          });
        }),
    );
    // break alone: the run goes on to the next model call
    const goesOn = scripted([turn([call("c1", "slow")]), says("finished")]);
    const first = agentLoop([userMessage("go")], ctx([slow]), { model: goesOn });
    for await (const event of first) if (event.type === "tool_execution_start") break;
    const ran = await first.result();
    const site = constructionSiteError(ran);
    if (site !== undefined) throw new Error(site);
    expect(ran.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(
      goesOn.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(2);
    // abort() then break: the call is answered, no model call after, the run ends with agent_end
    const stops = scripted([turn([call("c1", "slow")]), says("never")]);
    const second = agentLoop([userMessage("go")], ctx([slow]), { model: stops });
    for await (const event of second) {
      if (event.type === "tool_execution_start") {
        second.abort();
        second.abort(); // idempotent
        break;
      }
    }
    const result = await second.result();
    expect(result.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(
      stops.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.3 · after a turn-limit stop, agentLoopContinue with the returned transcript runs the next turn", async () => {
    const first = scripted([turn([call("c1", "read", { path: "a" })]), says("never")]);
    const stopped = await run("go", ctx([readTool()]), { model: first, maxTurns: 1 });
    expect(stopped.result.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(stopped.events.at(-1)).toMatchObject({
      type: "agent_end",
      errorMessage: expect.stringContaining("agentLoopContinue"),
    });
    expect(
      first.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);

    const model = scripted([says("a says so")]);
    const { events, result } = await finish(
      agentLoopContinue(ctx([readTool()], stopped.result), { model, maxTurns: 1 }),
    );
    expect(grammarViolations(events, result)).toEqual([]);
    expect(shape(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(events.at(-1)).toEqual({ type: "agent_end", messages: result });
    expect(result).toEqual([
      expect.objectContaining({ role: "assistant", stopReason: "stop", content: [text("a says so")] }),
    ]);
    // the model answers the tool result the limit left unanswered
    expect(model.requests[0]!.messages).toEqual(stopped.result);
    // an aborted last message is accepted too; a normal one still leaves nothing to answer
    const aborted: AssistantMessage = { ...says("half"), stopReason: "aborted", errorMessage: "stopped" };
    const resumed = await finish(
      agentLoopContinue(ctx([], [userMessage("hi"), aborted]), { model: scripted([says("hello")]) }),
    );
    expect(shape(resumed.events).slice(2, 5)).toEqual([
      "message_start:assistant",
      "message_update:text_delta",
      "message_end:assistant",
    ]);
    expect(() => agentLoopContinue(ctx([], [userMessage("hi"), says("hello"), aborted]), { model })).toThrow(
      /ends with an assistant message/,
    );
  });

  it("Lab 7.3 · an unknown, an invalid and a coercible call in one batch", async () => {
    const model = sloppy([
      turn([call("c1", "nope", {}), call("c2", "add", { a: "x" }), call("c3", "add", { a: "2", b: 3 })]),
      says("ok"),
    ]);
    const { events } = await run("go", ctx([addTool]), { model });
    expect(fromBatch(events).slice(0, 12)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "tool_execution_start:c3",
      "tool_execution_end:c3",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
    ]);
    const [unknown, invalid, coerced] = resultsOf(events);
    expect([unknown!.isError, textOf(unknown!)]).toEqual([true, 'Tool "nope" not found. Available tools: add.']);
    expect(invalid!.isError).toBe(true);
    expect(textOf(invalid!)).toContain('Invalid arguments for tool "add"');
    expect(textOf(invalid!)).toContain("/a: must be number");
    expect(textOf(invalid!)).toContain("/b: is required");
    expect(textOf(invalid!)).toContain('Received arguments: {"a":"x"}');
    expect([coerced!.isError, textOf(coerced!)]).toEqual([false, "5"]);
    // the transcript keeps the calls exactly as the model wrote them
    const sent = model.requests[1]!.messages[1] as AssistantMessage;
    expect(sent.content[2]).toEqual(call("c3", "add", { a: "2", b: 3 }));
  });

  it("Lab 7.3 · an unknown tool's answer names every tool there is, comma-separated, or (none)", async () => {
    const model = sloppy([turn([call("c1", "nope", {})]), says("ok")]);
    const two = await run("go", ctx([readTool(), addTool]), { model });
    expect(textOf(resultsOf(two.events)[0]!)).toBe('Tool "nope" not found. Available tools: read, add.');
    const none = await run("go", ctx([]), { model: sloppy([turn([call("c1", "nope", {})]), says("ok")]) });
    expect(textOf(resultsOf(none.events)[0]!)).toBe('Tool "nope" not found. Available tools: (none).');
    // a context without a tools list at all has none either
    const unlisted: AgentContext = { systemPrompt: "You are terse.", messages: [] };
    const noList = await run("go", unlisted, { model: sloppy([turn([call("c1", "nope", {})]), says("ok")]) });
    expect(textOf(resultsOf(noList.events)[0]!)).toBe('Tool "nope" not found. Available tools: (none).');
  });

  it("Lab 7.3 · invariant: every tool call is paired with exactly one result before the next model call", async () => {
    const thrower = probe("boom", async () => {
      throw new Error("boom");
    });
    const calls = [
      call("c1", "read", { path: "a" }),
      call("c2", "nope"),
      call("c3", "add", { a: "x" }),
      { ...call("c4", "add"), rawArguments: '{"a":', argumentsError: "Unexpected end of JSON input" },
      call("c5", "boom"),
      call("c6", "add", { a: 1, b: 2 }),
    ];
    const model = sloppy([turn(calls), says("ok")]);
    await run("go", ctx([readTool(), addTool, thrower]), { model });
    const sent = model.requests[1]!.messages;
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", ...calls.map(() => "toolResult")]);
    const results = sent.slice(2) as ToolResultMessage[];
    expect(results.map((r) => [r.toolCallId, r.toolName, r.isError])).toEqual([
      ["c1", "read", false],
      ["c2", "nope", true],
      ["c3", "add", true],
      ["c4", "add", true],
      ["c5", "boom", true],
      ["c6", "add", false],
    ]);
  });

  it("Lab 7.3 · a call with malformed JSON (argumentsError) is not executed; its error result carries the message", async () => {
    let executed = 0;
    const tool = probe("t", async () => {
      executed++;
      return textResult("ran");
    });
    const bad: ToolCall = {
      ...call("c1", "t", {}),
      rawArguments: '{"path": "a',
      argumentsError: "Unterminated string in JSON at position 11",
    };
    const model = scripted([turn([bad]), says("sorry")]);
    const { events } = await run("go", ctx([tool]), { model });
    const [result] = resultsOf(events);
    expect(executed).toBe(0);
    expect(result!.isError).toBe(true);
    expect(textOf(result!)).toContain("Unterminated string in JSON at position 11");
    expect(textOf(result!)).toContain('{"path": "a');
  });

  it("Lab 7.3 · a throwing tool (sync or async) becomes an error result the model can read", async () => {
    const asyncThrow = probe("a", async () => {
      throw new Error("disk full");
    });
    const syncThrow = probe("s", () => {
      throw new TypeError("bad state");
    });
    const model = scripted([turn([call("c1", "a"), call("c2", "s")]), says("noted")]);
    const { events } = await run("go", ctx([asyncThrow, syncThrow]), { model });
    // the synchronous throw settles first: ends come in completion order
    expect(fromBatch(events).slice(0, 4)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "tool_execution_end:c1",
    ]);
    expect(resultsOf(events).map((r) => [r.isError, textOf(r)])).toEqual([
      [true, "disk full"],
      [true, "bad state"],
    ]);
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({ role: "toolResult", isError: true });
  });

  it("Lab 7.3 · onUpdate becomes tool_execution_update; never after that call's tool_execution_end", async () => {
    let late: (() => void) | undefined;
    const tool = probe("t", async (_id, _args, _signal, onUpdate) => {
      onUpdate?.({ content: [{ type: "text", text: "10%" }], details: undefined });
      onUpdate?.({ content: [{ type: "text", text: "90%" }], details: undefined });
      late = () => onUpdate?.({ content: [{ type: "text", text: "late" }], details: undefined });
      return textResult("100%");
    });
    const model = scripted([turn([call("c1", "t")]), says("ok")]);
    const { events } = await run(
      "go",
      ctx([tool]),
      { model },
      {
        onEvent: (event) => {
          if (event.type === "tool_execution_end") late?.();
        },
      },
    );
    expect(fromBatch(events).slice(0, 6)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_update:c1",
      "tool_execution_update:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
    ]);
    const updates = events.filter((e) => e.type === "tool_execution_update");
    expect(updates.map((e) => textOf({ ...userMessage(""), content: e.partialResult.content }))).toEqual([
      "10%",
      "90%",
    ]);
    expect(updates[0]).toMatchObject({ toolCallId: "c1", toolName: "t", args: {} });
  });

  it("Lab 7.3 · prepareArguments repairs a copy: the tool gets the repair, the transcript keeps the original", async () => {
    const received: unknown[] = [];
    const tool = defineTool({
      name: "read",
      label: "Read",
      description: "Reads a file.",
      parameters: Type.Object({ path: Type.String() }),
      prepareArguments: (args) => {
        const a = args as { file?: string; path?: string };
        if (a.file !== undefined) {
          a.path = a.file;
          delete a.file;
        }
        return a;
      },
      async execute(_id, params) {
        received.push(params);
        return textResult("ok");
      },
    });
    const model = sloppy([turn([call("c1", "read", { file: "a.ts" })]), says("ok")]);
    const { result } = await run("go", ctx([tool]), { model });
    expect(received).toEqual([{ path: "a.ts" }]);
    expect((result[1] as AssistantMessage).content[0]).toEqual(call("c1", "read", { file: "a.ts" }));
  });

  it("Lab 7.3 · two parallel calls, the second finishes first: ends in completion order, results in source order", async () => {
    const slowDone = gate();
    const running: string[] = [];
    const slow = probe("slow", async () => {
      running.push("slow start");
      await slowDone.promise;
      return textResult("slow");
    });
    const fast = probe("fast", async () => {
      running.push("fast start");
      return textResult("fast");
    });
    const model = scripted([turn([call("c1", "slow"), call("c2", "fast")]), says("ok")]);
    const { events, result } = await run(
      "go",
      ctx([slow, fast]),
      { model },
      {
        onEvent: (event) => {
          if (event.type === "tool_execution_end" && event.toolCallId === "c2") slowDone.open();
        },
      },
    );
    expect(fromBatch(events).slice(0, 9)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
    ]);
    expect(running).toEqual(["slow start", "fast start"]);
    expect(resultsOf(events).map((r) => [r.toolCallId, textOf(r)])).toEqual([
      ["c1", "slow"],
      ["c2", "fast"],
    ]);
    const turnEnd = events.find((e) => e.type === "turn_end")!;
    expect(turnEnd.type === "turn_end" && turnEnd.toolResults.map((r) => r.toolCallId)).toEqual(["c1", "c2"]);
    expect(result.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult", "assistant"]);
  });

  it("Lab 7.3 · one sequential tool makes its whole batch sequential", async () => {
    const log: string[] = [];
    const step = (name: string, mode?: "sequential"): AnyTool =>
      probe(
        name,
        async () => {
          log.push(`${name} start`);
          await new Promise((resolve) => setImmediate(resolve));
          log.push(`${name} end`);
          return textResult(name);
        },
        mode === undefined ? {} : { executionMode: mode },
      );
    const model = scripted([turn([call("c1", "read"), call("c2", "write"), call("c3", "read")]), says("ok")]);
    const { events } = await run("go", ctx([step("read"), step("write", "sequential")]), { model });
    expect(fromBatch(events).slice(0, 13)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "tool_execution_start:c3",
      "tool_execution_end:c3",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
    ]);
    expect(log).toEqual(["read start", "read end", "write start", "write end", "read start", "read end"]);
  });

  it('Lab 7.3 · toolExecution: "sequential" in the config makes every batch sequential', async () => {
    const log: string[] = [];
    const step = (name: string): AnyTool =>
      probe(name, async () => {
        log.push(`${name} start`);
        await new Promise((resolve) => setImmediate(resolve));
        log.push(`${name} end`);
        return textResult(name);
      });
    const model = scripted([turn([call("c1", "a"), call("c2", "b")]), says("ok")]);
    await run("go", ctx([step("a"), step("b")]), { model, toolExecution: "sequential" });
    expect(log).toEqual(["a start", "a end", "b start", "b end"]);
  });

  // -------------------------------------------------------------------------------------------
  // Lab 7.4 · the tool hooks: beforeToolCall and afterToolCall
  // -------------------------------------------------------------------------------------------

  it("Lab 7.4 · invariant: abort during beforeToolCall answers every call as aborted; no model call after", async () => {
    const controller = new AbortController();
    let executed = 0;
    const tool = probe("t", async () => {
      executed++;
      return textResult("ran");
    });
    const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
    const { events } = await run(
      "go",
      ctx([tool]),
      {
        model,
        beforeToolCall: async () => {
          controller.abort();
          return undefined;
        },
      },
      { signal: controller.signal },
    );
    expect(fromBatch(events)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ]);
    expect(executed).toBe(0);
    expect(resultsOf(events).map((r) => [r.isError, textOf(r)])).toEqual([
      [true, 'Tool call "t" was aborted: the run was stopped before it finished.'],
      [true, 'Tool call "t" was aborted: the run was stopped before it finished.'],
    ]);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.4 · invariant: an abort during afterToolCall keeps the result of the tool that already ran; no model call after", async () => {
    // the tool has done its work: answering "aborted … before it finished" would invite a redo
    const controller = new AbortController();
    let executed = 0;
    const tool = probe("t", async () => {
      executed++;
      return { content: [{ type: "text" as const, text: "ran" }], details: { n: 1 } };
    });
    const model = scripted([turn([call("c1", "t")]), says("never")]);
    const { events } = await run(
      "go",
      ctx([tool]),
      {
        model,
        afterToolCall: () => {
          controller.abort();
          return new Promise(() => {}); // never settles: the abort must not wait for it
        },
      },
      { signal: controller.signal },
    );
    expect(fromBatch(events)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "agent_end",
    ]);
    expect(executed).toBe(1);
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(loose(end!)).toEqual({
      type: "tool_execution_end",
      toolCallId: "c1",
      toolName: "t",
      result: { content: [{ type: "text", text: "ran" }], details: { n: 1 } },
      isError: false,
    });
    expect(resultsOf(events).map((r) => [r.toolCallId, r.isError, textOf(r), r.details])).toEqual([
      ["c1", false, "ran", { n: 1 }],
    ]);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.4 · beforeToolCall sees the validated arguments and may block with a reason", async () => {
    const log: string[] = [];
    const seen: unknown[] = [];
    const model = sloppy([
      turn([call("c1", "read", { path: "secret.env" }), call("c2", "add", { a: "1", b: "2" })]),
      says("ok"),
    ]);
    const { events } = await run("go", ctx([readTool(log), addTool]), {
      model,
      beforeToolCall: ({ toolCall, args, tool, assistantMessage: issuer }) => {
        seen.push([toolCall.id, args, tool.name, issuer.stopReason]);
        return toolCall.name === "read" ? { block: true, reason: "secret files are off limits" } : undefined;
      },
    });
    expect(seen).toEqual([
      ["c1", { path: "secret.env" }, "read", "toolUse"],
      ["c2", { a: 1, b: 2 }, "add", "toolUse"],
    ]);
    expect(log).toEqual([]);
    expect(resultsOf(events).map((r) => [r.isError, textOf(r)])).toEqual([
      [true, "secret files are off limits"],
      [false, "3"],
    ]);
  });

  it("Lab 7.4 · beforeToolCall blocking without a reason: the call is not run and its result says it was blocked", async () => {
    const log: string[] = [];
    const model = sloppy([turn([call("c1", "read", { path: "a" })]), says("ok")]);
    const { events } = await run("go", ctx([readTool(log)]), { model, beforeToolCall: () => ({ block: true }) });
    expect(log).toEqual([]);
    expect(resultsOf(events).map((r) => [r.isError, textOf(r)])).toEqual([[true, 'Tool call "read" was blocked.']]);
  });

  it("Lab 7.4 · afterToolCall overrides field by field; a field left out keeps the tool's value", async () => {
    const tool = probe("t", async () => ({ content: [{ type: "text" as const, text: "raw" }], details: { n: 1 } }));
    const model = scripted([turn([call("c1", "t"), call("c2", "t"), call("c3", "t"), call("c4", "t")]), says("ok")]);
    const { events } = await run("go", ctx([tool]), {
      model,
      afterToolCall: ({ toolCall, result, isError }) => {
        expect([result.content, isError]).toEqual([[{ type: "text", text: "raw" }], false]);
        if (toolCall.id === "c1") return { content: [{ type: "text", text: "redacted" }] };
        if (toolCall.id === "c2") return { isError: true, details: { n: 2 } };
        if (toolCall.id === "c4") return { details: undefined }; // a field given as undefined clears it
        return undefined;
      },
    });
    const ends = events.filter((e) => e.type === "tool_execution_end");
    // isError left out and isError: false mean the same
    expect(
      ends.map((e) => [e.toolCallId, e.result.content, e.result.details, e.result.isError ?? false, e.isError]),
    ).toEqual([
      ["c1", [{ type: "text", text: "redacted" }], { n: 1 }, false, false],
      ["c2", [{ type: "text", text: "raw" }], { n: 2 }, true, true],
      ["c3", [{ type: "text", text: "raw" }], { n: 1 }, false, false],
      ["c4", [{ type: "text", text: "raw" }], undefined, false, false],
    ]);
    expect(resultsOf(events).map((r) => [r.toolCallId, textOf(r), "details" in r, r.details, r.isError])).toEqual([
      ["c1", "redacted", true, { n: 1 }, false],
      ["c2", "raw", true, { n: 2 }, true],
      ["c3", "raw", true, { n: 1 }, false],
      ["c4", "raw", false, undefined, false],
    ]);
  });

  it("Lab 7.4 · afterToolCall can decide terminate for every call of the batch", async () => {
    const tool = probe("t", async () => textResult("ran"));
    const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
    const { events } = await run("go", ctx([tool]), {
      model,
      afterToolCall: () => ({ terminate: true }),
    });
    expect(resultsOf(events).map((r) => [r.toolCallId, r.isError, textOf(r)])).toEqual([
      ["c1", false, "ran"],
      ["c2", false, "ran"],
    ]);
    expect(shape(events).slice(-3)).toEqual(["message_end:toolResult", "turn_end", "agent_end"]);
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.4 · invariant: a throw from afterToolCall ends the run well formed; the call keeps its result", async () => {
    const tool = probe("t", async () => textResult("ran"));
    const model = scripted([turn([call("c1", "t")]), says("never")]);
    const { events, result } = await run("go", ctx([tool]), {
      model,
      afterToolCall: () => {
        throw new Error("audit log down");
      },
    });
    expect(shape(events)).toEqual([
      ...TURN_ONE_TOOL,
      "tool_execution_start:c1",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const failure = 'afterToolCall failed for "t": audit log down';
    expect(resultsOf(events).map((r) => [r.toolCallId, r.isError, textOf(r)])).toEqual([["c1", true, failure]]);
    expect(lastAssistant(result)).toMatchObject({ stopReason: "error", errorMessage: failure });
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });

  it("Lab 7.4 · invariant: a throw from beforeToolCall ends the run; later calls are answered, not run", async () => {
    const ran: string[] = [];
    const tool = probe("t", async (id) => {
      ran.push(id);
      return textResult("ran");
    });
    const model = scripted([turn([call("c1", "t"), call("c2", "t"), call("c3", "t")]), says("never")]);
    const { events, result } = await run("go", ctx([tool]), {
      model,
      beforeToolCall: ({ toolCall }) => {
        if (toolCall.id === "c2") throw new Error("policy engine down");
        return undefined;
      },
    });
    expect(fromBatch(events)).toEqual([
      "tool_execution_start:c1",
      "tool_execution_start:c2",
      "tool_execution_end:c2",
      "tool_execution_start:c3",
      "tool_execution_end:c3",
      "tool_execution_end:c1",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const failure = 'beforeToolCall failed for "t": policy engine down';
    expect(resultsOf(events).map((r) => [r.toolCallId, r.isError, textOf(r)])).toEqual([
      ["c1", false, "ran"],
      ["c2", true, failure],
      ["c3", true, `Tool call "t" was not executed: the run is ending (${failure}).`],
    ]);
    expect(ran).toEqual(["c1"]);
    expect(lastAssistant(result)).toMatchObject({ stopReason: "error", errorMessage: failure });
    expect(
      model.requests,
      "model calls (one more means the model was called again after the run should have ended)",
    ).toHaveLength(1);
  });
  it("Lab 7.4 · an answer with a field that cannot be read fails its hook with the getter's error; a field left out keeps the tool's terminate and isError", async () => {
    const tool = probe("t", async () => textResult("ran"));
    const hostile = (field: string, message: string) =>
      Object.defineProperty({}, field, {
        enumerable: true,
        get() {
          throw new Error(message);
        },
      });
    const before = await run("go", ctx([tool]), {
      model: scripted([turn([call("c1", "t")]), says("never")]),
      beforeToolCall: () => hostile("block", "block unreadable") as BeforeToolCallResult,
    });
    expect(resultsOf(before.events).map((r) => [r.toolCallId, r.isError, textOf(r)])).toEqual([
      ["c1", true, 'beforeToolCall failed for "t": block unreadable'],
    ]);
    const after = await run("go", ctx([tool]), {
      model: scripted([turn([call("c1", "t")]), says("never")]),
      afterToolCall: () => hostile("content", "content unreadable") as AfterToolCallResult,
    });
    expect(resultsOf(after.events).map((r) => [r.toolCallId, r.isError, textOf(r)])).toEqual([
      ["c1", true, 'afterToolCall failed for "t": content unreadable'],
    ]);
    // the tool says terminate and isError; the hook overrides only the content
    const final = probe("f", async () => ({ ...textResult("raw"), isError: true, terminate: true }));
    const model = scripted([turn([call("c1", "f")]), says("never")]);
    const { events } = await run("go", ctx([final]), {
      model,
      afterToolCall: () => ({ content: [{ type: "text", text: "redacted" }] }),
    });
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(end?.type === "tool_execution_end" && [end.result.isError, end.result.terminate, end.isError]).toEqual([
      true,
      true,
      true,
    ]);
    expect(
      model.requests,
      "model calls (one more means the tool's terminate was lost to an override that left it out)",
    ).toHaveLength(1);
  });
});
