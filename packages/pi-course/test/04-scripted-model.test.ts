import { describe, expect, it } from "vitest";
import { ScriptedModel, assistantMessage, userMessage } from "../src/index.js";
import type { AssistantMessage, AssistantMessageEventStream, Context, ModelEvent, ToolCall } from "../src/index.js";

const T = 1000;
const clock = () => T;

const readCall: ToolCall = {
  type: "toolCall",
  id: "call_1",
  name: "read",
  arguments: { path: "a.ts" },
};

const context = (text = "go"): Context => ({
  systemPrompt: "be brief",
  messages: [userMessage(text, { timestamp: 1 })],
});

/**
 * In a practice folder a construction site throws inside the model, and the model (rightly)
 * turns that into an error event; make it the test's failure so the learner reads which lab.
 */
function surfaceConstructionSite(message: AssistantMessage): AssistantMessage {
  if (message.errorMessage?.includes("not implemented yet")) throw new Error(message.errorMessage);
  return message;
}

/** The final message of one turn (see `surfaceConstructionSite`). */
async function finalOf(stream: AssistantMessageEventStream): Promise<AssistantMessage> {
  return surfaceConstructionSite(await stream.result());
}

/** Every event of one turn, with `partial` copied as it was when the event was seen. */
async function play(stream: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const seen: ModelEvent[] = [];
  for await (const event of stream) {
    if (event.type === "error") surfaceConstructionSite(event.error);
    seen.push("partial" in event ? { ...event, partial: structuredClone(event.partial) } : event);
  }
  return seen;
}

/** The message as it stands mid-stream: the scripted model's identity and the given content. */
const partialWith = (content: AssistantMessage["content"]): AssistantMessage => ({
  role: "assistant",
  content,
  provider: "scripted",
  model: "scripted-model",
  usage: { input: 0, output: 0, totalTokens: 0 },
  stopReason: "stop",
  timestamp: T,
});

describe("chapter 04 · ScriptedModel", () => {
  it("Lab 4.1 · a pre-aborted signal is an aborted error event, not a throw", async () => {
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "x" }], "stop")], { now: clock });
    const stream = model.stream(context(), { signal: AbortSignal.abort() });
    const events = await play(stream);
    const aborted: AssistantMessage = {
      ...partialWith([]),
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    };
    expect(events, "a pre-aborted call is one error event with reason aborted, never a throw").toEqual([
      { type: "error", reason: "aborted", error: aborted },
    ]);
    expect(await stream.result()).toBe((events[0] as Extract<ModelEvent, { type: "error" }>).error);
  });

  it("Lab 4.1 · a pre-aborted call does not use up a turn (turns count what was played, calls count stream())", async () => {
    const model = new ScriptedModel([], { now: clock });
    const refused = await model.stream(context(), { signal: AbortSignal.abort() }).result();
    expect(refused.stopReason).toBe("aborted");
    // The refused call took no turn: the next call asks for turn 1 still.
    const next = await finalOf(model.stream(context()));
    expect(next.errorMessage).toBe(
      "ScriptedModel: the script has no turn 1 (it has 0). Add a turn to the script, or stop the run sooner.",
    );
    expect(model.requests).toHaveLength(2);
  });

  it("Lab 4.1 · an exhausted script is an error event that says what to do; every request is recorded", async () => {
    const model = new ScriptedModel([], { now: clock });
    const asked = context("first");
    const stream = model.stream(asked);
    asked.messages.push(userMessage("changed after the call", { timestamp: 9 }));
    const events = await play(stream);
    expect(events.map((e) => e.type)).toEqual(["error"]);
    const message = await stream.result();
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe(
      "ScriptedModel: the script has no turn 1 (it has 0). Add a turn to the script, or stop the run sooner.",
    );
    await model.stream(context("second")).result();
    expect(model.requests).toEqual([context("first"), context("second")]);
  });

  it("Lab 4.1 · a throwing or broken responder becomes an error event that keeps the cause, never a throw", async () => {
    // Reading this turn in any way throws (its `then` is undefined, so it can still be awaited).
    const unreadable = new Proxy(
      {},
      {
        get: (_target, key) => {
          if (key === "then") return undefined;
          throw new Error("unreadable turn");
        },
        has: () => {
          throw new Error("unreadable turn");
        },
        ownKeys: () => {
          throw new Error("unreadable turn");
        },
        getOwnPropertyDescriptor: () => {
          throw new Error("unreadable turn");
        },
      },
    ) as AssistantMessage;
    const model = new ScriptedModel(
      [
        () => {
          throw new Error("bad script");
        },
        () => null as unknown as AssistantMessage,
        () => unreadable,
      ],
      { now: clock },
    );
    const threw = await finalOf(model.stream(context()));
    expect(threw.stopReason).toBe("error");
    expect(threw.errorMessage).toBe("ScriptedModel: the responder threw: bad script");
    const broken = await finalOf(model.stream(context()));
    expect(broken.stopReason).toBe("error");
    expect(broken.errorMessage).toMatch(/^ScriptedModel: cannot play call 2: \S/);
    // The cause's own message is kept: it is how a learner sees which construction site was hit.
    const unplayable = await finalOf(model.stream(context()));
    expect(unplayable.errorMessage).toBe("ScriptedModel: cannot play call 3: unreadable turn");
  });

  it("Lab 4.1 · a context that cannot be copied is an error event", async () => {
    const model = new ScriptedModel([assistantMessage([], "stop")]);
    const bad = { messages: [], extra: () => 1 } as unknown as Context;
    const message = await finalOf(model.stream(bad));
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toMatch(/cannot be copied/);
  });

  it("Lab 4.1 · requests keeps the latest keepRequests contexts, dropping the oldest; keepRequests 0 keeps none", () => {
    const turns = () => [1, 2, 3].map((n) => assistantMessage([{ type: "text", text: `t${n}` }], "stop"));
    // recorded by stream() itself, before anything is played
    const model = new ScriptedModel(turns(), { keepRequests: 2, now: clock });
    for (const text of ["a", "b", "c"]) model.stream(context(text));
    expect(model.requests.map((request) => (request.messages[0]!.content as { text: string }[])[0]!.text)).toEqual([
      "b",
      "c",
    ]);
    expect(model.calls).toBe(3);
    const none = new ScriptedModel(turns(), { keepRequests: 0, now: clock });
    none.stream(context());
    expect([none.requests, none.calls]).toEqual([[], 1]);
  });

  it("Lab 4.1 · a call aborted while its responder computes the turn is an aborted error event", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel(
      [
        async () => {
          controller.abort();
          return assistantMessage([{ type: "text", text: "late" }], "stop");
        },
      ],
      { now: clock },
    );
    const events = await play(model.stream(context(), { signal: controller.signal }));
    expect(events).toEqual([
      {
        type: "error",
        reason: "aborted",
        error: { ...partialWith([]), stopReason: "aborted", errorMessage: "Request was aborted" },
      },
    ]);
    expect(await model.stream(context()).result()).toMatchObject({ stopReason: "error" }); // the turn was used
  });

  it("Lab 4.2 · plays a text turn: start, deltas with the cumulative partial, done with the same message", async () => {
    const usage = { input: 10, output: 5, totalTokens: 15 };
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "Hello world" }], "stop", { usage })], {
      chunkSize: 4,
      now: clock,
    });
    const stream = model.stream(context());
    const events = await play(stream);
    const text = (t: string) => ({ type: "text" as const, text: t });
    expect(events).toEqual([
      { type: "start", partial: partialWith([]) },
      { type: "text_delta", contentIndex: 0, delta: "Hell", partial: partialWith([text("Hell")]) },
      { type: "text_delta", contentIndex: 0, delta: "o wo", partial: partialWith([text("Hello wo")]) },
      { type: "text_delta", contentIndex: 0, delta: "rld", partial: partialWith([text("Hello world")]) },
      { type: "done", reason: "stop", message: { ...partialWith([text("Hello world")]), usage } },
    ]);
    const final = await stream.result();
    expect(final).toBe((events.at(-1) as Extract<ModelEvent, { type: "done" }>).message);
  });

  it("Lab 4.2 · stream() returns at once and plays asynchronously, yielding between events", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "abcdef" }], "stop")], {
      chunkSize: 2,
      now: clock,
    });
    const stream = model.stream(context(), { signal: controller.signal });
    // Aborted right after stream() returned, in the same tick. stream() checked the signal and
    // took the turn before returning, so the turn is played: `start` comes at once, then the
    // first yield sees the abort (any yield does, a microtask too). A model that played
    // synchronously would have finished with done; one that checked the signal later (say, from
    // a queued microtask) or yielded before `start` would end with a bare error event.
    controller.abort();
    const events = await play(stream);
    expect(
      events,
      "stream() takes the turn before it returns: start comes first, then the abort (no start: play began late)",
    ).toEqual([
      { type: "start", partial: partialWith([]) },
      {
        type: "error",
        reason: "aborted",
        error: { ...partialWith([]), stopReason: "aborted", errorMessage: "Request was aborted" },
      },
    ]);
  });

  it("Lab 4.2 · plays two turns from one instance and records a deep copy of each request", async () => {
    const model = new ScriptedModel(
      [
        assistantMessage([{ type: "text", text: "first" }], "stop"),
        assistantMessage([{ type: "text", text: "done" }], "stop"),
      ],
      { now: clock },
    );
    const first = context("one");
    const a = await finalOf(model.stream(first));
    first.messages.push(userMessage("mutated later", { timestamp: 2 }));
    (first.messages[0]!.content[0] as { text: string }).text = "changed";
    const b = await finalOf(model.stream(context("two")));
    expect(a.content).toEqual([{ type: "text", text: "first" }]);
    expect(b.stopReason).toBe("stop");
    expect(b.content).toEqual([{ type: "text", text: "done" }]);
    expect(model.requests).toEqual([context("one"), context("two")]);
  });

  it("Lab 4.2 · a responder computes the turn from the context it was asked with", async () => {
    const model = new ScriptedModel(
      [
        (ctx, turnIndex) => assistantMessage([{ type: "text", text: `${turnIndex}:${ctx.messages.length}` }], "stop"),
        async () => ({ stopReason: "error" as const, errorMessage: "later" }),
      ],
      { now: clock },
    );
    const first = await finalOf(model.stream(context()));
    expect(first.content).toEqual([{ type: "text", text: "0:1" }]);
    const second = await finalOf(model.stream(context()));
    expect(second.stopReason).toBe("error");
    expect(second.errorMessage).toBe("later");
  });

  it("Lab 4.2 · an error turn keeps its partial text and ends with an error event", async () => {
    const model = new ScriptedModel([{ stopReason: "error", errorMessage: "overloaded", partialText: "I will" }], {
      chunkSize: 3,
      now: clock,
    });
    const stream = model.stream(context());
    const events = await play(stream);
    const failed: AssistantMessage = {
      ...partialWith([{ type: "text", text: "I will" }]),
      stopReason: "error",
      errorMessage: "overloaded",
    };
    expect(events).toEqual([
      { type: "start", partial: partialWith([]) },
      { type: "text_delta", contentIndex: 0, delta: "I w", partial: partialWith([{ type: "text", text: "I w" }]) },
      { type: "text_delta", contentIndex: 0, delta: "ill", partial: partialWith([{ type: "text", text: "I will" }]) },
      { type: "error", reason: "error", error: failed },
    ]);
    expect(await stream.result()).toEqual(failed);
  });

  it("Lab 4.2 · a scripted aborted turn ends with an error event too (reason aborted), its text kept", async () => {
    const model = new ScriptedModel(
      [assistantMessage([{ type: "text", text: "half" }], "aborted", { errorMessage: "stopped" })],
      { now: clock },
    );
    const events = await play(model.stream(context()));
    expect(events.map((event) => event.type)).toEqual(["start", "text_delta", "error"]);
    expect(events.at(-1)).toEqual({
      type: "error",
      reason: "aborted",
      error: { ...partialWith([{ type: "text", text: "half" }]), stopReason: "aborted", errorMessage: "stopped" },
    });
  });

  it("Lab 4.2 · an abort mid-play ends with an aborted error event that keeps the partial content", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "abcdefgh" }], "stop")], {
      chunkSize: 2,
      now: clock,
    });
    const stream = model.stream(context(), { signal: controller.signal });
    const types: string[] = [];
    for await (const event of stream) {
      if (event.type === "error") surfaceConstructionSite(event.error);
      types.push(event.type);
      if (event.type === "text_delta" && event.partial.content.length === 1) {
        if ((event.partial.content[0] as { text: string }).text === "abcd") controller.abort();
      }
    }
    expect(types).toEqual(["start", "text_delta", "text_delta", "error"]);
    const message = await stream.result();
    expect(message).toEqual({
      ...partialWith([{ type: "text", text: "abcd" }]),
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    });
  });

  it("Lab 4.2 · never splits a surrogate pair across deltas", async () => {
    const model = new ScriptedModel([assistantMessage([{ type: "text", text: "a😀b😀" }], "stop")], {
      chunkSize: 2,
    });
    const deltas: string[] = [];
    for await (const event of model.stream(context())) {
      if (event.type === "error") surfaceConstructionSite(event.error);
      if (event.type === "text_delta") deltas.push(event.delta);
    }
    expect(deltas).toEqual(["a😀", "b😀"]);
  });

  it("Lab 4.3 · plays text then a tool call: the call streams as raw JSON text, then toolcall_end, then done", async () => {
    const usage = { input: 10, output: 5, totalTokens: 15 };
    const scripted = assistantMessage([{ type: "text", text: "Hello world" }, readCall], "toolUse", { usage });
    const model = new ScriptedModel([scripted], { chunkSize: 4, now: clock });
    const stream = model.stream(context());
    const events = await play(stream);
    const raw = (text: string): ToolCall => ({ ...readCall, arguments: {}, rawArguments: text });
    const text = (t: string) => ({ type: "text" as const, text: t });
    expect(events).toEqual([
      { type: "start", partial: partialWith([]) },
      { type: "text_delta", contentIndex: 0, delta: "Hell", partial: partialWith([text("Hell")]) },
      { type: "text_delta", contentIndex: 0, delta: "o wo", partial: partialWith([text("Hello wo")]) },
      { type: "text_delta", contentIndex: 0, delta: "rld", partial: partialWith([text("Hello world")]) },
      {
        type: "toolcall_delta",
        contentIndex: 1,
        delta: '{"pa',
        partial: partialWith([text("Hello world"), raw('{"pa')]),
      },
      {
        type: "toolcall_delta",
        contentIndex: 1,
        delta: 'th":',
        partial: partialWith([text("Hello world"), raw('{"path":')]),
      },
      {
        type: "toolcall_delta",
        contentIndex: 1,
        delta: '"a.t',
        partial: partialWith([text("Hello world"), raw('{"path":"a.t')]),
      },
      {
        type: "toolcall_delta",
        contentIndex: 1,
        delta: 's"}',
        partial: partialWith([text("Hello world"), raw('{"path":"a.ts"}')]),
      },
      {
        type: "toolcall_end",
        contentIndex: 1,
        toolCall: readCall,
        partial: partialWith([text("Hello world"), readCall]),
      },
      {
        type: "done",
        reason: "toolUse",
        message: {
          ...partialWith([text("Hello world"), readCall]),
          usage,
          stopReason: "toolUse",
        },
      },
    ]);
    const final = await stream.result();
    expect(final).toBe((events.at(-1) as Extract<ModelEvent, { type: "done" }>).message);
    // The call at toolcall_end is the very block of the final message (not a copy)...
    expect((events[8] as Extract<ModelEvent, { type: "toolcall_end" }>).toolCall).toBe(final.content[1]);
    // ...and shares nothing with the script: its arguments are a copy of the scripted ones.
    expect((final.content[1] as ToolCall).arguments).not.toBe((scripted.content[1] as ToolCall).arguments);
  });

  it("Lab 4.3 · a length turn streams its calls' text but never completes them (no toolcall_end)", async () => {
    const truncated: ToolCall = { ...readCall, arguments: {}, rawArguments: '{"path":"a.' };
    const model = new ScriptedModel([assistantMessage([truncated], "length")], { chunkSize: 64, now: clock });
    const events = await play(model.stream(context()));
    expect(events.map((e) => e.type)).toEqual(["start", "toolcall_delta", "done"]);
    const done = events[2] as Extract<ModelEvent, { type: "done" }>;
    expect(done.reason).toBe("length");
    expect(done.message.content).toEqual([truncated]);
  });

  it("Lab 4.3 · an abort while a call streams ends the turn as aborted, the call left as streamed (no toolcall_end)", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel([assistantMessage([readCall], "toolUse")], { chunkSize: 4, now: clock });
    const stream = model.stream(context(), { signal: controller.signal });
    const types: string[] = [];
    for await (const event of stream) {
      if (event.type === "error") surfaceConstructionSite(event.error);
      types.push(event.type);
      if (event.type === "toolcall_delta") controller.abort();
    }
    expect(types).toEqual(["start", "toolcall_delta", "error"]);
    expect(await stream.result()).toEqual({
      ...partialWith([{ ...readCall, arguments: {}, rawArguments: '{"pa' }]),
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    });
  });
});
