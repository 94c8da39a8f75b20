import { describe, expect, expectTypeOf, it } from "vitest";
import {
  AssistantMessageEventStream,
  EMPTY_USAGE,
  assistantMessage,
  textOf,
  toolResultMessage,
  userMessage,
} from "../src/index.js";
import type {
  AgentMessage,
  AssistantContent,
  AssistantMessage,
  Message,
  ModelEvent,
  StopReason,
  ToolCall,
} from "../src/index.js";

/** An application's own message type, added by declaration merging (as users do). */
interface NoteMessage {
  role: "note";
  text: string;
  timestamp: number;
}
declare module "../src/types.js" {
  interface CustomAgentMessages {
    note: NoteMessage;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

const call: ToolCall = { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.ts" } };

describe("chapter 03 · canonical messages", () => {
  it("Lab 3.1 · userMessage builds from a string or from text and image blocks, copying them", () => {
    expect(userMessage("hi", { timestamp: 5 })).toEqual({
      role: "user",
      content: [{ type: "text", text: "hi" }],
      timestamp: 5,
    });
    const blocks = [{ type: "text" as const, text: "a" }];
    const message = userMessage(blocks, { timestamp: 6 });
    expect(message.content).toEqual(blocks);
    expect(message.content).not.toBe(blocks);
    expect(message.content[0]).not.toBe(blocks[0]);
    const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
    const withImage = userMessage([image, ...blocks], { timestamp: 7 });
    expect(withImage.content).toEqual([image, ...blocks]);
    expect(withImage.content[0]).not.toBe(image);
  });

  it("Lab 3.1 · constructors stamp the current time unless a timestamp is given", () => {
    const before = Date.now();
    const message = userMessage("now");
    expect(message.timestamp).toBeGreaterThanOrEqual(before);
    expect(message.timestamp).toBeLessThanOrEqual(Date.now());
  });

  it("Lab 3.1 · assistantMessage fills explicit defaults and deep-copies its content", () => {
    const content: AssistantContent[] = [{ type: "text", text: "ok" }, call];
    const message = assistantMessage(content, "toolUse", { timestamp: 1 });
    expect(message).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "ok" }, call],
      provider: "unknown",
      model: "unknown",
      usage: { input: 0, output: 0, totalTokens: 0 },
      stopReason: "toolUse",
      timestamp: 1,
    });
    const shared = "assistantMessage copies its content: the message shares the caller's";
    content.push({ type: "text", text: "added by the caller later" });
    expect(message.content, `${shared} array`).toHaveLength(2);
    expect(message.content[1], `${shared} block`).not.toBe(call);
    expect((message.content[1] as ToolCall).arguments, `${shared} arguments`).not.toBe(call.arguments);
    // The default usage is a fresh copy of the frozen, all-zero EMPTY_USAGE.
    expect(message.usage).not.toBe(EMPTY_USAGE);
    expect(EMPTY_USAGE).toEqual({ input: 0, output: 0, totalTokens: 0 });
    expect(Object.isFrozen(EMPTY_USAGE)).toBe(true);
  });

  it("Lab 3.1 · assistantMessage takes overrides, an error message among them", () => {
    const usage = { input: 3, output: 4, totalTokens: 7 };
    const message = assistantMessage([], "error", {
      provider: "p",
      model: "m",
      usage,
      errorMessage: "boom",
      timestamp: 2,
    });
    expect(message).toEqual({
      role: "assistant",
      content: [],
      provider: "p",
      model: "m",
      usage,
      stopReason: "error",
      errorMessage: "boom",
      timestamp: 2,
    });
    expect(message.usage).not.toBe(usage);
  });

  it("Lab 3.1 · toolResultMessage pairs a result with its call; isError defaults to false", () => {
    expect(toolResultMessage({ toolCallId: "call_1", toolName: "read", content: "1: x", timestamp: 3 })).toEqual({
      role: "toolResult",
      toolCallId: "call_1",
      toolName: "read",
      content: [{ type: "text", text: "1: x" }],
      isError: false,
      timestamp: 3,
    });
    expect(
      toolResultMessage({
        toolCallId: "c",
        toolName: "t",
        content: [{ type: "text", text: "no" }],
        details: { code: 2 },
        isError: true,
        timestamp: 4,
      }),
    ).toEqual({
      role: "toolResult",
      toolCallId: "c",
      toolName: "t",
      content: [{ type: "text", text: "no" }],
      details: { code: 2 },
      isError: true,
      timestamp: 4,
    });
  });

  it("Lab 3.2 · textOf joins text blocks with a newline and skips tool calls (lossy)", () => {
    const message = deepFreeze(
      assistantMessage([{ type: "text", text: "first" }, call, { type: "text", text: "second" }], "toolUse"),
    );
    expect(textOf(message), "textOf is lossy on purpose: it skips tool calls").toBe("first\nsecond");
  });

  it("Lab 3.2 · textOf reads user and tool-result messages and never mutates its input", () => {
    const user = deepFreeze(
      userMessage([
        { type: "text", text: "a" },
        { type: "text", text: "b" },
      ]),
    );
    const copy = structuredClone(user);
    expect(textOf(user)).toBe("a\nb");
    expect(user).toEqual(copy);
    const result = deepFreeze(toolResultMessage({ toolCallId: "c", toolName: "t", content: "out" }));
    expect(textOf(result)).toBe("out");
    expect(textOf(assistantMessage([call], "toolUse"))).toBe("");
  });

  it("Lab 3.3 · done: the iterator sees every event, result() is the same message object", async () => {
    const stream = new AssistantMessageEventStream();
    const message = assistantMessage([{ type: "text", text: "hi" }], "stop");
    const events: ModelEvent[] = [
      { type: "start", partial: message },
      { type: "text_delta", contentIndex: 0, delta: "hi", partial: message },
      { type: "done", reason: "stop", message },
    ];
    for (const event of events) stream.push(event);
    const seen: ModelEvent[] = [];
    for await (const event of stream) seen.push(event);
    expect(seen).toEqual(events);
    expect(await stream.result()).toBe(message);
  });

  it("Lab 3.3 · error: the iterator sees only the error event, result() is that same message", async () => {
    const stream = new AssistantMessageEventStream();
    const error = assistantMessage([], "error", { errorMessage: "HTTP 500" });
    stream.push({ type: "error", reason: "error", error });
    const seen: ModelEvent[] = [];
    for await (const event of stream) seen.push(event);
    expect(seen).toEqual([{ type: "error", reason: "error", error }]);
    expect(await stream.result()).toBe(error);
  });

  it("Lab 3.3 · refuses at push a terminal event whose name or reason disagrees with stopReason", async () => {
    const stream = new AssistantMessageEventStream();
    const stopped = assistantMessage([], "stop");
    const failed = assistantMessage([], "error", { errorMessage: "x" });
    const aborted = assistantMessage([], "aborted", { errorMessage: "x" });
    const refused: ModelEvent[] = [
      { type: "done", reason: "toolUse", message: stopped },
      { type: "done", reason: "error" as "stop", message: failed },
      { type: "error", reason: "stop" as "error", error: stopped },
      { type: "error", reason: "error", error: aborted },
      { type: "error", reason: "error", error: stopped },
    ];
    for (const event of refused) {
      expect(() => stream.push(event)).toThrow(TypeError);
      expect(() => stream.push(event)).toThrow(/reason must equal the message's stopReason/);
    }
    // Nothing refused reached the stream: it still takes a coherent terminal event.
    stream.push({ type: "done", reason: "stop", message: stopped });
    const seen: ModelEvent[] = [];
    for await (const event of stream) seen.push(event);
    expect(seen).toEqual([{ type: "done", reason: "stop", message: stopped }]);
    expect(await stream.result()).toBe(stopped);
  });

  it("Lab 3.3 · the types: unions narrow by role and by type; custom messages merge in", () => {
    expectTypeOf<StopReason>().toEqualTypeOf<"stop" | "length" | "toolUse" | "error" | "aborted">();
    expectTypeOf<Extract<Message, { role: "assistant" }>>().toEqualTypeOf<AssistantMessage>();
    expectTypeOf<Extract<ModelEvent, { type: "done" }>["reason"]>().toEqualTypeOf<"stop" | "length" | "toolUse">();
    expectTypeOf<Extract<ModelEvent, { type: "error" }>["reason"]>().toEqualTypeOf<"error" | "aborted">();
    expectTypeOf<NoteMessage>().toMatchTypeOf<AgentMessage>();
    expectTypeOf<Extract<AgentMessage, { role: "note" }>>().toEqualTypeOf<NoteMessage>();
    expectTypeOf<Message>().toMatchTypeOf<AgentMessage>();
    // A note is not a canonical message: it is not assignable to Message.
    expectTypeOf<NoteMessage>().not.toMatchTypeOf<Message>();
    expect(new AssistantMessageEventStream().push({ type: "start", partial: assistantMessage([], "stop") })).toBe(
      undefined,
    );
  });
});
