import { checkRejectionsPerTest } from "./support/leaks.js";
import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import {
  AssistantMessageEventStream,
  agentLoop,
  assistantMessage,
  createOpenAICompatibleModel,
  runAgentLoop,
  textOf,
  userMessage,
} from "../src/index.js";
import type {
  AgentContext,
  AgentEvent,
  AgentLoopConfig,
  AgentMessage,
  AssistantContent,
  AssistantMessage,
  Model,
  ToolCall,
  ToolResultMessage,
} from "../src/index.js";
import { constructionSiteError, finish, grammarViolations, shape, textResult } from "./support/agent-run.js";
import type { AnyTool, FinishedRun } from "./support/agent-run.js";
import { HOSTILE, TRAP_SPRUNG, hostileThrown, throwingGetter, throwingProxy } from "./support/agent-faults.js";
import { SseServer, sseOf, sseReply } from "./support/sse-server.js";
import { call, says, scripted, turn } from "./support/messages.js";

/**
 * The loop against hostile user code (issue 15): values thrown or returned that cannot be read,
 * code that never settles once the run is aborted, tool hooks bounded by `hookTimeoutMs`, and
 * two tool calls of one message sharing an id. Each run is checked against the lifecycle
 * grammar; every test has a small timeout, so a hang fails instead of waiting.
 */

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

function probe(name: string, execute: AnyTool["execute"], extra: Partial<AnyTool> = {}): AnyTool {
  return { name, label: name, description: `the ${name} tool`, parameters: Type.Object({}), execute, ...extra };
}
const okTool = (name = "t", log: string[] = []): AnyTool =>
  probe(name, async (id) => {
    log.push(id);
    return textResult(`ran ${id}`);
  });

const ctx = (tools: AnyTool[] = []): AgentContext => ({ systemPrompt: "sys", messages: [], tools });

/** Runs a loop to the end (2 s at most, unless told) and asserts the lifecycle grammar and the pairing invariant. */
async function run(
  config: AgentLoopConfig,
  tools: AnyTool[] = [],
  signal?: AbortSignal,
  deadlineMs = 2000,
): Promise<FinishedRun> {
  const finished = await finish(agentLoop([userMessage("go")], ctx(tools), config, signal), undefined, deadlineMs);
  expect(grammarViolations(finished.events, finished.result)).toEqual([]);
  return finished;
}

const lastAssistant = (result: AgentMessage[]): AssistantMessage =>
  result.filter((m): m is AssistantMessage => m.role === "assistant").at(-1)!;
const resultsOf = (events: AgentEvent[]): ToolResultMessage[] =>
  events.flatMap((e) => (e.type === "message_end" && e.message.role === "toolResult" ? [e.message] : []));

/** A promise that never settles unless told to, so a test can settle it late. */
function never<T = never>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/** Values thrown with no usable string form (issue 15 §2), a fresh set per use. */
const hostileThrows = (): [string, unknown][] =>
  HOSTILE.filter((kind) => kind !== "error").map((kind) => [kind, hostileThrown(kind, "unused")]);

// Any rejection left unhandled by a test fails that test, named by the rejection's stack (support/leaks.ts).
checkRejectionsPerTest(import.meta.url, () => new Promise((resolve) => setTimeout(resolve, 5)));

/** A sink-driven run has no `finish()` to surface a lab still to write: do it here. */
function surfaceConstructionSite(result: AgentMessage[]): void {
  const site = constructionSiteError(result);
  if (site !== undefined) throw new Error(site);
}

/** The loop never reports its own failure: every hostile value is the hook's or the tool's. */
function expectNoLoopFailure(result: AgentMessage[]): void {
  for (const message of result) {
    if (message.role === "assistant")
      expect(message.errorMessage ?? "").not.toMatch(/agent loop failed|Cannot convert/);
    if (message.role === "toolResult") expect(textOf(message)).not.toMatch(/agent loop failed|Cannot convert/);
  }
}

// ---------------------------------------------------------------------------------------------

describe("chapter 07 · the agent loop against hostile code", () => {
  // -------------------------------------------------------------------------------------------
  // After an abort, nothing keeps the run alive
  // -------------------------------------------------------------------------------------------

  /**
   * Runs until the user code made by `stuck()` is entered, which never settles; 10 ms later the
   * user aborts. The run must then end well formed before `run`'s deadline. Afterwards the stuck
   * code settles (rejects): no late event, no unhandled rejection.
   */
  async function abortWhileStuck(
    config: (stuck: () => Promise<never>) => AgentLoopConfig,
    tools: (stuck: () => Promise<never>) => AnyTool[] = () => [],
  ): Promise<FinishedRun & { late: () => Promise<void> }> {
    const pending = never();
    // the test's own handle; the loop's chains on the promise must still handle the rejection
    pending.promise.catch(() => {});
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stuck = (): Promise<never> => {
      timer ??= setTimeout(() => controller.abort(), 10);
      return pending.promise;
    };
    try {
      const finished = await run(config(stuck), tools(stuck), controller.signal);
      expect(controller.signal.aborted).toBe(true);
      return {
        ...finished,
        late: async () => {
          const count = finished.events.length;
          pending.reject(new Error("a late failure, after the run ended"));
          await new Promise((resolve) => setTimeout(resolve, 5));
          expect(finished.events).toHaveLength(count);
        },
      };
    } finally {
      clearTimeout(timer);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Two tool calls with one id
  // -------------------------------------------------------------------------------------------

  const addTool = (log: string[]): AnyTool => ({
    name: "add",
    label: "add",
    description: "adds",
    parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
    async execute(id, { a, b }) {
      log.push(`${id}: ${a}+${b}`);
      return textResult(String(a + b));
    },
  });
  const repeatedText = (id: string, renamed: string) =>
    `Tool call "add" was not executed: its id "${id}" was already used by an earlier call in the same message, ` +
    `so it was renamed "${renamed}". Every call needs its own id; re-issue this call if it is still needed.`;

  // -------------------------------------------------------------------------------------------
  // the loop: runLoop and streamAssistantMessage against hostile code (Lab 7.2)
  // -------------------------------------------------------------------------------------------

  it("Lab 7.2 · invariant: the model, transformContext, convertToLlm or a queue getter throwing a value with no string form ends the run well formed", async () => {
    type Place = "model" | "transformContext" | "convertToLlm" | "getSteeringMessages" | "getFollowUpMessages";
    const places: Place[] = ["model", "transformContext", "convertToLlm", "getSteeringMessages", "getFollowUpMessages"];
    for (const [label, thrown] of hostileThrows()) {
      for (const place of places) {
        const thrower = () => {
          throw thrown;
        };
        const scriptedModel = scripted([says("one"), says("two")]);
        const model: Model = place === "model" ? { provider: "p", id: "m", stream: thrower } : scriptedModel;
        const config: AgentLoopConfig = { model };
        if (place !== "model") config[place] = thrower;
        const { events, result } = await run(config);
        expectNoLoopFailure(result);
        const failure = lastAssistant(result);
        expect(failure.stopReason, `${label} from ${place}`).toBe("error");
        expect(failure.errorMessage, `${label} from ${place}`).toMatch(
          place === "model" ? /^The model failed: / : new RegExp(`^${place} failed: `),
        );
        expect(shape(events).slice(-4)).toEqual([
          "message_start:assistant",
          "message_end:assistant",
          "turn_end",
          "agent_end",
        ]);
      }
    }
  }, 5000);

  it("Lab 7.2 · invariant: hostile model events and messages (a Proxy event, throwing getters, unreadable tool calls) end the turn as one error message", async () => {
    const good = says("hi");
    const partial = assistantMessage([], "stop");
    // built by hand: the message helpers would read the hostile blocks themselves
    const withBlocks = (...content: unknown[]): AssistantMessage => ({
      ...turn([]),
      content: content as AssistantContent[],
    });
    const cases: [string, unknown[]][] = [
      ["a Proxy event", [throwingProxy()]],
      ["a null event", [null]],
      ["a Proxy partial", [{ type: "start", partial: throwingProxy() }]],
      [
        "a done event whose message getter throws",
        [{ type: "start", partial }, throwingGetter({ type: "done", reason: "stop" }, "message")],
      ],
      [
        "a final message whose content getter throws",
        [
          { type: "start", partial },
          { type: "done", reason: "stop", message: throwingGetter(good, "content") },
        ],
      ],
      ["a final message that is a Proxy", [{ type: "done", reason: "stop", message: throwingProxy() }]],
      [
        "a tool call whose id getter throws",
        [{ type: "done", reason: "toolUse", message: withBlocks(throwingGetter(call("c1", "t"), "id")) }],
      ],
      [
        "a tool call that is a Proxy",
        [{ type: "done", reason: "toolUse", message: withBlocks(call("c1", "t"), throwingProxy()) }],
      ],
    ];
    for (const [label, events] of cases) {
      const model: Model = {
        provider: "hand",
        id: "hostile",
        stream: () =>
          ({
            async *[Symbol.asyncIterator]() {
              yield* events;
            },
            result: async () => good,
          }) as unknown as AssistantMessageEventStream,
      };
      let executed = 0;
      const tool = probe("t", async () => (executed++, textResult("ran")));
      const { events: seen, result } = await run({ model }, [tool]);
      expectNoLoopFailure(result);
      expect(
        result.filter((m) => m.role === "assistant"),
        label,
      ).toHaveLength(1);
      expect(lastAssistant(result).stopReason, label).toBe("error");
      expect(
        seen.some((e) => e.type === "tool_execution_start"),
        label,
      ).toBe(false);
      expect(executed, label).toBe(0);
    }
  }, 5000);

  it("Lab 7.2 · invariant: a queue getter answering with hostile messages ends the run, naming the getter", async () => {
    const revoked = Proxy.revocable([], {});
    revoked.revoke();
    const answers: [string, unknown][] = [
      ["a revoked Proxy for an array", revoked.proxy],
      [
        "an array that throws on access",
        new Proxy([userMessage("x")], {
          get: () => {
            throw new Error("no");
          },
        }),
      ],
      ["a Proxy message", [throwingProxy()]],
      ["a message without a role", [{ content: "hi" }]],
      ["not an array", "steer"],
    ];
    for (const [label, answer] of answers) {
      for (const getter of ["getSteeringMessages", "getFollowUpMessages"] as const) {
        const model = scripted([says("one"), says("two")]);
        const config: AgentLoopConfig = { model };
        config[getter] = () => answer as never;
        const { result } = await run(config);
        expectNoLoopFailure(result);
        expect(lastAssistant(result).errorMessage, `${label} from ${getter}`).toMatch(
          new RegExp(`^${getter} failed: `),
        );
        expect(model.requests).toHaveLength(1);
      }
    }
  }, 5000);

  it("Lab 7.2 · invariant: after an abort, a transformContext or convertToLlm that never settles does not keep the run pending", async () => {
    for (const hook of ["transformContext", "convertToLlm"] as const) {
      const model = scripted([says("never")]);
      const { events, result, late } = await abortWhileStuck((stuck) => ({ model, [hook]: stuck }));
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
      expect(lastAssistant(result)).toMatchObject({
        stopReason: "aborted",
        errorMessage: "The run was aborted before the model was called.",
      });
      expect(model.requests).toHaveLength(0);
      await late();
    }
  }, 5000);

  it("Lab 7.2 · invariant: after an abort, a getSteeringMessages or getFollowUpMessages that never settles does not keep the run pending", async () => {
    for (const getter of ["getSteeringMessages", "getFollowUpMessages"] as const) {
      const model = scripted([says("one"), says("never")]);
      let other = 0;
      const { events, result, late } = await abortWhileStuck((stuck) => ({
        model,
        getSteeringMessages: getter === "getSteeringMessages" ? stuck : () => (other++, []),
        getFollowUpMessages: getter === "getFollowUpMessages" ? stuck : () => (other++, []),
      }));
      expect(shape(events).slice(-4)).toEqual([
        "message_update:text_delta",
        "message_end:assistant",
        "turn_end",
        "agent_end",
      ]);
      expect(lastAssistant(result)).toMatchObject({ stopReason: "stop", content: [{ type: "text", text: "one" }] });
      expect(model.requests).toHaveLength(1);
      expect(other).toBe(getter === "getSteeringMessages" ? 0 : 1); // nothing polled after the abort
      await late();
    }
  }, 5000);

  it("Lab 7.2 · invariant: after an abort, a model stream that ignores its signal (no event, or no result) ends the turn as aborted", async () => {
    const deaf = (stuck: () => Promise<never>, first: "nothing" | "start" | "no result"): Model => ({
      provider: "deaf",
      id: "deaf",
      stream: () => {
        if (first === "no result") {
          // iteration ends without a terminal event and result() never settles
          return { async *[Symbol.asyncIterator]() {}, result: stuck } as unknown as AssistantMessageEventStream;
        }
        void stuck(); // only to have the user abort
        const stream = new AssistantMessageEventStream();
        const partial = assistantMessage([{ type: "text", text: "half" }], "stop");
        if (first === "start") stream.push({ type: "start", partial });
        return stream; // never ends, whatever the signal says
      },
    });
    for (const first of ["nothing", "start", "no result"] as const) {
      const { events, result, late } = await abortWhileStuck((stuck) => ({ model: deaf(stuck, first) }));
      expect(shape(events).slice(-4), first).toEqual([
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end",
      ]);
      expect(lastAssistant(result), first).toMatchObject({
        stopReason: "aborted",
        errorMessage: "The run was aborted while the model was answering.",
        content: first === "start" ? [{ type: "text", text: "half" }] : [],
      });
      await late();
    }
  }, 5000);

  it("Lab 7.2 · invariant: after an abort, an event sink that never settles does not keep runAgentLoop pending; events keep their order, none comes late", async () => {
    const controller = new AbortController();
    const delivered: AgentEvent[] = [];
    const stuck = never<void>();
    const model = scripted([says("one"), says("never")]);
    // the sink awaits its subscribers; one of them hangs on message_end of the assistant message
    const sink = (event: AgentEvent): void | Promise<void> => {
      delivered.push(event);
      if (event.type === "message_end" && event.message.role === "assistant") {
        setTimeout(() => controller.abort(), 20);
        return stuck.promise;
      }
      return Promise.resolve();
    };
    const started = performance.now();
    const result = await runAgentLoop(
      [userMessage("go")],
      ctx(),
      { model, getFollowUpMessages: () => [userMessage("more")] },
      sink,
      controller.signal,
    );
    surfaceConstructionSite(result);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(grammarViolations(delivered, result)).toEqual([]);
    expect(shape(delivered).slice(-3)).toEqual(["message_end:assistant", "turn_end", "agent_end"]);
    expect(model.requests).toHaveLength(1);
    stuck.reject(new Error("the subscriber failed, late")); // ignored: the run has ended
    const count = delivered.length;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(delivered).toHaveLength(count);
  }, 5000);

  it("Lab 7.2 · without an abort the sink is still awaited, and a sink failure still rejects after the run ends", async () => {
    const order: string[] = [];
    let added: AgentMessage[] = [];
    const model = scripted([says("one")]);
    const sink = async (event: AgentEvent): Promise<void> => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      order.push(event.type);
      if (event.type === "agent_end") added = event.messages;
      if (event.type === "turn_end") throw new Error("subscriber broke");
    };
    const outcome = runAgentLoop([userMessage("go")], ctx(), { model }, sink, new AbortController().signal);
    await expect(outcome).rejects.toThrow("subscriber broke");
    surfaceConstructionSite(added);
    // each event was delivered only after the previous one's promise settled
    expect(order).toEqual([
      "agent_start",
      "turn_start",
      "message_start",
      "message_end",
      "message_start",
      "message_update",
      "message_end",
      "turn_end",
      "agent_end",
    ]);
  }, 5000);

  // -------------------------------------------------------------------------------------------
  // tool batches against hostile tools (Lab 7.3)
  // -------------------------------------------------------------------------------------------

  it("Lab 7.3 · invariant: a tool or prepareArguments throwing a value with no string form gets one readable error result; the run goes on", async () => {
    for (const [label, thrown] of hostileThrows()) {
      for (const where of ["execute (async)", "execute (sync)", "prepareArguments"] as const) {
        const tool = probe(
          "t",
          where === "execute (sync)"
            ? () => {
                throw thrown;
              }
            : async () => {
                if (where === "execute (async)") throw thrown;
                return textResult("ran");
              },
          where === "prepareArguments"
            ? {
                prepareArguments: () => {
                  throw thrown;
                },
              }
            : {},
        );
        const model = scripted([turn([call("c1", "t"), call("c2", "ok")]), says("done")]);
        const { events, result } = await run({ model }, [tool, okTool("ok")]);
        expectNoLoopFailure(result);
        const results = resultsOf(events);
        expect(
          results.map((r) => [r.toolCallId, r.isError]),
          `${label} from ${where}`,
        ).toEqual([
          ["c1", true],
          ["c2", false],
        ]);
        expect(textOf(results[0]!).length, `${label} from ${where}`).toBeGreaterThan(0);
        expect(lastAssistant(result).stopReason, `${label} from ${where}`).toBe("stop");
      }
    }
  }, 5000);

  it("Lab 7.3 · invariant: a tool result whose content, isError, terminate or details getter throws (or a Proxy) becomes one error result", async () => {
    const base = textResult("fine");
    const hostile: [string, unknown][] = [
      ...["content", "isError", "terminate", "details"].map((field): [string, unknown] => [
        `a ${field} getter that throws`,
        throwingGetter(base, field),
      ]),
      ["a Proxy that throws on every access", throwingProxy()],
      [
        "a content array whose iteration throws",
        {
          ...base,
          content: new Proxy([], {
            get: () => {
              throw new Error("no items");
            },
          }),
        },
      ],
    ];
    for (const [label, value] of hostile) {
      const tool = probe("t", async () => value as never);
      const model = scripted([turn([call("c1", "t"), call("c2", "ok")]), says("done")]);
      const { events, result } = await run({ model }, [tool, okTool("ok")]);
      expectNoLoopFailure(result);
      const ends = events.filter((e) => e.type === "tool_execution_end");
      // isError left out and isError: false mean the same
      expect(
        ends.map((e) => [e.toolCallId, e.isError, e.result.isError ?? false]),
        label,
      ).toEqual([
        ["c1", true, true],
        ["c2", false, false],
      ]);
      // a Proxy's `then` throws when the result is awaited: that throw is the tool's answer
      const expected =
        label === "a Proxy that throws on every access"
          ? new RegExp(TRAP_SPRUNG)
          : /^Tool "t" returned (a result that cannot be read|no valid result)/;
      expect(textOf(resultsOf(events)[0]!), label).toMatch(expected);
      expect(lastAssistant(result).stopReason, label).toBe("stop");
    }
    // a truthy non-boolean isError/terminate is read as a boolean: the events and the message agree
    const loose = probe("t", async () => ({ ...textResult("odd"), isError: "yes", terminate: 1 }) as never);
    const { events } = await run({ model: scripted([turn([call("c1", "t")]), says("done")]) }, [loose]);
    const end = events.find((e) => e.type === "tool_execution_end")!;
    expect(end).toMatchObject({ isError: false, result: { isError: false, terminate: false } });
  }, 5000);

  it("Lab 7.3 · invariant: after an abort, a tool's execute that never settles does not keep the run pending", async () => {
    const model = scripted([turn([call("c1", "t")]), says("never")]);
    const { events, late } = await abortWhileStuck(
      () => ({ model }),
      (stuck) => [probe("t", stuck)],
    );
    expect(resultsOf(events).map((r) => textOf(r))).toEqual([
      'Tool call "t" was aborted: the run was stopped before it finished.',
    ]);
    expect(model.requests).toHaveLength(1);
    await late();
  }, 5000);

  it("Lab 7.3 · invariant: a tool that aborts the run and returns a promise that rejects later is answered at once, and its late rejection is handled", async () => {
    const controller = new AbortController();
    const late = never<never>();
    const model = scripted([turn([call("c1", "t")]), says("never")]);
    const tool = probe("t", () => {
      controller.abort();
      return late.promise;
    });
    const { events } = await run({ model }, [tool], controller.signal);
    expect(resultsOf(events).map((r) => textOf(r))).toEqual([
      'Tool call "t" was aborted: the run was stopped before it finished.',
    ]);
    late.reject(new Error("late rejection")); // afterEach fails the test if nobody handles it
  }, 5000);

  it("Lab 7.3 · invariant: an abort in the microtask right after a tool returned a promise that never settles still ends the run", async () => {
    for (const when of ["microtask", "second microtask"] as const) {
      const controller = new AbortController();
      const model = scripted([turn([call("c1", "t")]), says("never")]);
      const tool = probe("t", () => {
        if (when === "microtask") queueMicrotask(() => controller.abort());
        else queueMicrotask(() => queueMicrotask(() => controller.abort()));
        return never<never>().promise;
      });
      const { events } = await run({ model }, [tool], controller.signal, 1000);
      expect(resultsOf(events).map((r) => textOf(r))).toEqual([
        'Tool call "t" was aborted: the run was stopped before it finished.',
      ]);
    }
  }, 5000);

  it("Lab 7.3 · two calls with one id in a message: the first runs, the repeat gets a fresh id and an error result; one start/end per call", async () => {
    for (const toolExecution of ["parallel", "sequential"] as const) {
      const log: string[] = [];
      const calls = [
        call("c1", "add", { a: 1, b: 1 }),
        call("c1", "add", { a: 2, b: 2 }),
        call("c1_dup1", "add", { a: 3, b: 3 }), // the first fresh id is taken: the repeat gets c1_dup2
        call("c1", "add", { a: 4, b: 4 }),
      ];
      const sent = turn(calls);
      const model = scripted([sent, says("done")]);
      const { events, result } = await run({ model, toolExecution }, [addTool(log)]);
      expect(log, toolExecution).toEqual(["c1: 1+1", "c1_dup1: 3+3"]);
      const ids = ["c1", "c1_dup2", "c1_dup1", "c1_dup3"];
      expect(
        events.filter((e) => e.type === "tool_execution_start").map((e) => e.toolCallId),
        toolExecution,
      ).toEqual(ids);
      expect(
        events
          .filter((e) => e.type === "tool_execution_end")
          .map((e) => e.toolCallId)
          .sort(),
        toolExecution,
      ).toEqual([...ids].sort());
      expect(
        resultsOf(events).map((r) => [r.toolCallId, r.isError, textOf(r)]),
        toolExecution,
      ).toEqual([
        ["c1", false, "2"],
        ["c1_dup2", true, repeatedText("c1", "c1_dup2")],
        ["c1_dup1", false, "6"],
        ["c1_dup3", true, repeatedText("c1", "c1_dup3")],
      ]);
      // the transcript holds a copy with unique ids; the model's own message is untouched
      const recorded = result[1] as AssistantMessage;
      expect(recorded.content.map((b) => (b as ToolCall).id)).toEqual(ids);
      expect(recorded.content.map((b) => (b as ToolCall).arguments)).toEqual(calls.map((c) => c.arguments));
      expect(sent.content.map((b) => (b as ToolCall).id)).toEqual(["c1", "c1", "c1_dup1", "c1"]);
      // what the model is sent next: every call id once, every result id once, paired in order
      const next = model.requests[1]!.messages;
      const wireCalls = next.flatMap((m) =>
        m.role === "assistant" ? m.content.filter((b) => b.type === "toolCall").map((b) => b.id) : [],
      );
      const wireResults = next.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []));
      expect(wireCalls).toEqual(ids);
      expect(wireResults).toEqual(ids);
    }
  }, 5000);

  it("Lab 7.3 · two calls with one id over the OpenAI-compatible wire: the next request carries each id once, with one tool message each", async () => {
    const server = await SseServer.start();
    try {
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
        id: "chatcmpl-dup",
        object: "chat.completion.chunk",
        model: "test-model",
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      const toolCall = (index: number, args: string) => ({
        tool_calls: [{ index, id: "call_same", type: "function", function: { name: "add", arguments: args } }],
      });
      // a server that repeats one id for two calls of one message (seen from some OpenAI-compatible hosts)
      server.reply(
        sseReply(
          sseOf([
            chunk({ role: "assistant", content: null }),
            chunk(toolCall(0, '{"a": 1, "b": 2}')),
            chunk(toolCall(1, '{"a": 5, "b": 5}')),
            chunk({}, "tool_calls"),
          ]),
          { seed: 7, maxPiece: 13 },
        ),
      );
      server.reply(sseReply(sseOf([chunk({ role: "assistant", content: "3" }), chunk({}, "stop")]), { seed: 8 }));
      const model = createOpenAICompatibleModel({ baseUrl: server.baseUrl, model: "test-model", apiKey: "sk-test" });
      const log: string[] = [];
      const { events, result } = await run({ model }, [addTool(log)], undefined, 8000); // real HTTP: a loaded machine is slow
      expect(log).toEqual(["call_same: 1+2"]);
      expect(shape(events).filter((type) => type.startsWith("tool_execution"))).toEqual([
        "tool_execution_start:call_same",
        "tool_execution_start:call_same_dup1",
        "tool_execution_end:call_same_dup1",
        "tool_execution_end:call_same",
      ]);
      expect(resultsOf(events).map((r) => [r.toolCallId, r.isError, textOf(r)])).toEqual([
        ["call_same", false, "3"],
        ["call_same_dup1", true, repeatedText("call_same", "call_same_dup1")],
      ]);
      expect(lastAssistant(result)).toMatchObject({ stopReason: "stop", content: [{ type: "text", text: "3" }] });
      // the second request, as the server received it: unique ids, one tool message per id
      expect(server.requests).toHaveLength(2);
      const wire = JSON.parse(server.requests[1]!.body) as { messages: Record<string, any>[] };
      const assistant = wire.messages.find((m) => m.role === "assistant")!;
      expect(
        assistant.tool_calls.map((c: { id: string; function: { arguments: string } }) => [
          c.id,
          JSON.parse(c.function.arguments),
        ]),
      ).toEqual([
        ["call_same", { a: 1, b: 2 }],
        ["call_same_dup1", { a: 5, b: 5 }],
      ]);
      expect(wire.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual([
        "call_same",
        "call_same_dup1",
      ]);
    } finally {
      await server.close();
    }
  }, 10_000);

  // -------------------------------------------------------------------------------------------
  // the tool hooks against hostile hooks, and hookTimeoutMs (Lab 7.4)
  // -------------------------------------------------------------------------------------------

  it("Lab 7.4 · invariant: a tool hook throwing a value with no string form ends the run well formed, naming the hook", async () => {
    for (const [label, thrown] of hostileThrows()) {
      for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
        const log: string[] = [];
        const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
        const config: AgentLoopConfig = { model, toolExecution: "sequential" };
        config[hook] = () => {
          throw thrown;
        };
        const { events, result } = await run(config, [okTool("t", log)]);
        expectNoLoopFailure(result);
        expect(
          resultsOf(events).map((r) => r.isError),
          `${label} from ${hook}`,
        ).toEqual([true, true]);
        expect(lastAssistant(result).errorMessage, `${label} from ${hook}`).toMatch(
          new RegExp(`^${hook} failed for "t": `),
        );
        expect(log).toEqual(hook === "afterToolCall" ? ["c1"] : []);
        expect(model.requests).toHaveLength(1);
      }
    }
  }, 5000);

  it("Lab 7.4 · invariant: a beforeToolCall or afterToolCall answer that cannot be read ends the run like a throw from the hook", async () => {
    const hostile: [string, "beforeToolCall" | "afterToolCall", unknown][] = [
      ["a block getter that throws", "beforeToolCall", throwingGetter({ reason: "r" }, "block")],
      ["a reason getter that throws", "beforeToolCall", throwingGetter({ block: true }, "reason")],
      ["a Proxy", "beforeToolCall", throwingProxy()],
      ...["content", "isError", "terminate", "details"].map((field): [string, "afterToolCall", unknown] => [
        `a ${field} getter that throws`,
        "afterToolCall",
        throwingGetter({}, field),
      ]),
      ["a Proxy", "afterToolCall", throwingProxy()],
      ["a primitive", "afterToolCall", true],
      ["content that is not an array", "afterToolCall", { content: "text" }],
    ];
    for (const [label, hook, answer] of hostile) {
      const log: string[] = [];
      const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
      const config: AgentLoopConfig = { model, toolExecution: "sequential" };
      config[hook] = async () => answer as never;
      const { events, result } = await run(config, [okTool("t", log)]);
      expectNoLoopFailure(result);
      expect(
        resultsOf(events).map((r) => [r.toolCallId, r.isError]),
        `${label} from ${hook}`,
      ).toEqual([
        ["c1", true],
        ["c2", true],
      ]);
      expect(lastAssistant(result).errorMessage, `${label} from ${hook}`).toMatch(
        new RegExp(`^${hook} failed for "t": `),
      );
      expect(log, `${label} from ${hook}`).toEqual(hook === "afterToolCall" ? ["c1"] : []);
      expect(model.requests).toHaveLength(1);
    }
  }, 5000);

  it("Lab 7.4 · invariant: after an abort, a beforeToolCall or afterToolCall that never settles does not keep the run pending", async () => {
    for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
      const log: string[] = [];
      const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
      const { events, late } = await abortWhileStuck(
        (stuck) => ({ model, toolExecution: "sequential", [hook]: stuck }),
        () => [okTool("t", log)],
      );
      // afterToolCall: the tool already ran, its own result stands
      const aborted = 'Tool call "t" was aborted: the run was stopped before it finished.';
      expect(
        resultsOf(events).map((r) => [r.toolCallId, textOf(r)]),
        hook,
      ).toEqual([
        ["c1", hook === "beforeToolCall" ? aborted : "ran c1"],
        ["c2", aborted],
      ]);
      expect(log).toEqual(hook === "beforeToolCall" ? [] : ["c1"]);
      expect(model.requests).toHaveLength(1);
      await late();
    }
  }, 5000);

  it("Lab 7.4 · hookTimeoutMs: a beforeToolCall or afterToolCall that never settles ends the run like a throw, once the bound passes", async () => {
    for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
      const log: string[] = [];
      const late = never<undefined>();
      const model = scripted([turn([call("c1", "t"), call("c2", "t")]), says("never")]);
      const config: AgentLoopConfig = { model, toolExecution: "sequential", hookTimeoutMs: 40 };
      config[hook] = () => late.promise;
      const started = performance.now();
      const { events, result } = await run(config, [okTool("t", log)]);
      expect(performance.now() - started).toBeGreaterThanOrEqual(35);
      const failure = `${hook} failed for "t": it did not settle within 40 ms (hookTimeoutMs in the loop config); its late answer is ignored.`;
      expect(
        resultsOf(events).map((r) => [r.toolCallId, textOf(r)]),
        hook,
      ).toEqual([
        ["c1", failure],
        ["c2", `Tool call "t" was not executed: the run is ending (${failure}).`],
      ]);
      expect(lastAssistant(result)).toMatchObject({ stopReason: "error", errorMessage: failure });
      expect(log).toEqual(hook === "afterToolCall" ? ["c1"] : []);
      expect(model.requests).toHaveLength(1);
      late.resolve(undefined); // ignored
    }
  }, 5000);

  it("Lab 7.4 · hookTimeoutMs: a hook that settles in time is used as usual, and leaves no timer behind; a bad bound is refused", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
    const before = timers();
    const model = scripted([turn([call("c1", "t")]), says("done")]);
    const { events, result } = await run(
      {
        model,
        hookTimeoutMs: 60_000,
        beforeToolCall: async () => {
          await new Promise((resolve) => setTimeout(resolve, 10));
          return undefined;
        },
        afterToolCall: async () => ({ content: [{ type: "text", text: "rewritten" }] }),
      },
      [okTool("t")],
    );
    expect(resultsOf(events).map((r) => textOf(r))).toEqual(["rewritten"]);
    expect(lastAssistant(result).stopReason).toBe("stop");
    // No timer of ours is left (one of the worker's own may have ended meanwhile: hence <=).
    expect(timers()).toBeLessThanOrEqual(before);
    // a bound that is not a usable number of milliseconds is refused before the run starts
    for (const bad of [0, -1, Number.NaN, Infinity, 2 ** 31, "100" as unknown as number]) {
      expect(() => agentLoop([userMessage("go")], ctx(), { model, hookTimeoutMs: bad }), String(bad)).toThrow(
        /hookTimeoutMs must be a number of milliseconds from 1 to 2147483647/,
      );
    }
    expect(model.requests).toHaveLength(2);
  }, 5000);
});
