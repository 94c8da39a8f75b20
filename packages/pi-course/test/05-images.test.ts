/**
 * Chapter 05: images in user messages and tool results, on both wires. The translations are
 * checked by deep equality; over HTTP the server must receive exactly that request, and an image
 * a model cannot take (or cannot be sent at all) must end the turn before any request is made.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createAnthropicModel,
  createOpenAICompatibleModel,
  textOf,
  toAnthropicRequest,
  toChatCompletionsRequest,
  toWireMessages,
  toolResultMessage,
  userMessage,
} from "../src/index.js";
import type { AssistantMessage, Context, ImageContent, InputKind, Model } from "../src/index.js";
import { SseServer, sseOf, sseReply } from "./support/sse-server.js";
import { turnRunner } from "./support/model-turn.js";

const KEY = "sk-test-SECRET-images-5e6f7a8b";
const NOW = 1_700_000_000_000;
const runTurn = turnRunner(KEY);

/** A 1×1 PNG, and the first bytes of a JPEG (its base64 has a `/` and a `+`-free padding). */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]).toString("base64");
const png: ImageContent = { type: "image", data: PNG, mimeType: "image/png" };
const jpeg: ImageContent = { type: "image", data: JPEG, mimeType: "image/jpeg" };

const asking: AssistantMessage = {
  role: "assistant",
  content: [
    { type: "toolCall", id: "c1", name: "screenshot", arguments: {} },
    { type: "toolCall", id: "c2", name: "read", arguments: { path: "pics.md" } },
  ],
  provider: "p",
  model: "m",
  usage: { input: 1, output: 1, totalTokens: 2 },
  stopReason: "toolUse",
  timestamp: 2,
};

/** A user image, a result that is only an image, a result with text and two images, then text. */
const context: Context = {
  messages: [
    userMessage([{ type: "text", text: "What is in these?" }, png], { timestamp: 1 }),
    asking,
    toolResultMessage({ toolCallId: "c1", toolName: "screenshot", content: [png], timestamp: 3 }),
    toolResultMessage({
      toolCallId: "c2",
      toolName: "read",
      content: [{ type: "text", text: "two pictures" }, jpeg, png],
      timestamp: 4,
    }),
    userMessage("Compare them.", { timestamp: 5 }),
  ],
};

const dataUrl = (image: ImageContent) => ({
  type: "image_url",
  image_url: { url: `data:${image.mimeType};base64,${image.data}` },
});
const anthropicImage = (image: ImageContent) => ({
  type: "image",
  source: { type: "base64", media_type: image.mimeType, data: image.data },
});

/** The Chat Completions messages of `context`. */
const CHAT_MESSAGES = [
  { role: "user", content: [{ type: "text", text: "What is in these?" }, dataUrl(png)] },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "c1", type: "function", function: { name: "screenshot", arguments: "{}" } },
      { id: "c2", type: "function", function: { name: "read", arguments: '{"path":"pics.md"}' } },
    ],
  },
  { role: "tool", tool_call_id: "c1", content: "[1 image of this result: in the next user message]" },
  { role: "tool", tool_call_id: "c2", content: "two pictures\n[2 images of this result: in the next user message]" },
  {
    role: "user",
    content: [
      { type: "text", text: "Images from the screenshot result (call c1):" },
      dataUrl(png),
      { type: "text", text: "Images from the read result (call c2):" },
      dataUrl(jpeg),
      dataUrl(png),
    ],
  },
  { role: "user", content: "Compare them." },
];

/** The Anthropic messages of `context`. */
const ANTHROPIC_MESSAGES = [
  { role: "user", content: [{ type: "text", text: "What is in these?" }, anthropicImage(png)] },
  {
    role: "assistant",
    content: [
      { type: "tool_use", id: "c1", name: "screenshot", input: {} },
      { type: "tool_use", id: "c2", name: "read", input: { path: "pics.md" } },
    ],
  },
  {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "c1", content: [anthropicImage(png)] },
      {
        type: "tool_result",
        tool_use_id: "c2",
        content: [{ type: "text", text: "two pictures" }, anthropicImage(jpeg), anthropicImage(png)],
      },
      { type: "text", text: "Compare them." },
    ],
  },
];

/** Images that cannot be sent, and what the refusal must say. */
const BAD_IMAGES: [string, unknown, RegExp][] = [
  [
    "no mimeType",
    { type: "image", data: PNG },
    /context\.messages\[0\] \(user\) holds an image whose mimeType is not an image media type \(got nothing\): set mimeType/,
  ],
  [
    "a mimeType that is not an image's",
    { type: "image", data: PNG, mimeType: "text/plain" },
    /mimeType is not an image media type \(got "text\/plain"\)/,
  ],
  [
    "a data: URL as data",
    { type: "image", data: `data:image/png;base64,${PNG}`, mimeType: "image/png" },
    /data is a data: URL: put only the base64 after the comma in data/,
  ],
  [
    "text that is not base64",
    { type: "image", data: "not base64!", mimeType: "image/png" },
    /data is not base64 \(got 11 characters starting "not base64!"\): encode the image's bytes/,
  ],
  ["URL-safe base64", { type: "image", data: PNG.replace("+", "-"), mimeType: "image/png" }, /data is not base64/],
  [
    "base64 with line breaks",
    { type: "image", data: `${PNG.slice(0, 40)}\n${PNG.slice(40)}`, mimeType: "image/png" },
    /data is not base64/,
  ],
  ["unpadded base64", { type: "image", data: PNG.slice(0, -2), mimeType: "image/png" }, /data is not base64/],
  ["no data", { type: "image", mimeType: "image/png" }, /data is not base64 \(got undefined\)/],
];

const withImage = (image: unknown): Context => ({
  messages: [{ role: "user", content: [{ type: "text", text: "look" }, image as ImageContent], timestamp: 1 }],
});

const TEXT_ONLY =
  /context\.messages\[0\] \(user\) holds an image, and this model takes no images \(its options say input: \["text"\]\)\. Remove the image from the context \(or describe it in text\), or use a model that takes images and add "image" to input\./;

const OK = sseOf([{ choices: [{ index: 0, delta: { content: "A cat." }, finish_reason: "stop" }] }]);
const ANTHROPIC_OK = readFileSync(new URL("./fixtures/anthropic/anthropic-text.sse", import.meta.url), "utf8");

function chatModel(baseUrl: string, input?: InputKind[]): Model {
  return createOpenAICompatibleModel({
    baseUrl,
    model: "test-model",
    apiKey: KEY,
    now: () => NOW,
    ...(input && { input }),
  });
}

function anthropicModel(baseUrl: string, input?: InputKind[]): Model {
  return createAnthropicModel({
    baseUrl,
    model: "claude-test",
    apiKey: KEY,
    maxTokens: 64,
    now: () => NOW,
    ...(input && { input }),
  });
}

let server: SseServer;
beforeAll(async () => {
  server = await SseServer.start();
});
afterAll(async () => {
  await server.close();
});

describe("chapter 05 · images on the Chat Completions wire", () => {
  it("Lab 5.3 · user images are image_url data URLs; a tool result's images follow its run of tool messages, in one user message; constructors copy images, textOf skips them", () => {
    const before = structuredClone(context);
    expect(toChatCompletionsRequest(context, { model: "m" }).messages).toEqual(CHAT_MESSAGES);
    expect(toChatCompletionsRequest(context, { model: "m", input: ["text", "image"] }).messages).toEqual(CHAT_MESSAGES);
    expect(context).toEqual(before);
    // results at the very end of the context: their images still go out, after them
    expect(toWireMessages({ messages: context.messages.slice(0, 4) }).at(-1)).toEqual(CHAT_MESSAGES[4]);
    // a text-only result sends no extra message
    const plain = toolResultMessage({ toolCallId: "c1", toolName: "screenshot", content: "none", timestamp: 3 });
    expect(toWireMessages({ messages: [asking, plain] }).at(-1)).toEqual({
      role: "tool",
      tool_call_id: "c1",
      content: "none",
    });
    // the constructors copy images (never share them), and textOf skips them
    const user = userMessage([png, { type: "text", text: "caption" }], { timestamp: 1 });
    expect(user.content).toEqual([png, { type: "text", text: "caption" }]);
    expect(user.content[0]).not.toBe(png);
    expect(textOf(user)).toBe("caption");
    expect(textOf(context.messages[3]!)).toBe("two pictures");
  });

  it("Lab 5.3 · refused before anything is built: an image for a text-only model, a bad mimeType, data that is not base64", () => {
    expect(() => toChatCompletionsRequest(context, { model: "m", input: ["text"] })).toThrow(TEXT_ONLY);
    expect(() => toWireMessages({ messages: context.messages.slice(1, 3) }, { input: ["text"] })).toThrow(
      /context\.messages\[1\] \(toolResult\) holds an image, and this model takes no images/,
    );
    const textOnly = { messages: [userMessage("no pictures here", { timestamp: 1 })] };
    expect(toChatCompletionsRequest(textOnly, { model: "m", input: ["text"] }).messages).toEqual([
      { role: "user", content: "no pictures here" },
    ]);
    for (const [, image, expected] of BAD_IMAGES) {
      expect(() => toChatCompletionsRequest(withImage(image), { model: "m" })).toThrow(expected);
    }
    for (const input of [["image"], "text", ["text", "video"], []]) {
      expect(() =>
        createOpenAICompatibleModel({ baseUrl: "http://127.0.0.1:1/v1", model: "m", input: input as InputKind[] }),
      ).toThrow(/createOpenAICompatibleModel: input lists what the model takes: \["text"\] or \["text", "image"\]/);
    }
  });

  it("Lab 5.5 · the Chat Completions server receives exactly the images; a text-only model or a bad image sends nothing", async () => {
    server.reply(sseReply(OK));
    const before = server.requests.length;
    const seen = await runTurn(chatModel(server.baseUrl, ["text", "image"]), context);
    expect(seen.signature).toEqual(["start", "text_delta@0", "done:stop"]);
    expect(server.requests.length - before).toBe(1);
    const sent = JSON.parse(server.requests.at(-1)!.body);
    expect(sent).toEqual({
      model: "test-model",
      stream: true,
      stream_options: { include_usage: true },
      messages: CHAT_MESSAGES,
    });

    const blind = await runTurn(chatModel(server.baseUrl, ["text"]), context);
    expect(blind.signature).toEqual(["error:error"]);
    expect(blind.message.errorMessage).toMatch(
      /^The request could not be built: context\.messages\[0\] \(user\) holds an image, and this model takes no images/,
    );
    expect(blind.message.errorDetails).toEqual({ kind: "request", retryable: false, attempts: 0 });
    expect(blind.message.content).toEqual([]);

    const bad = await runTurn(
      chatModel(server.baseUrl),
      withImage({ type: "image", data: "not base64!", mimeType: "image/png" }),
    );
    expect(bad.signature).toEqual(["error:error"]);
    expect(bad.message.errorMessage).toMatch(
      /^The request could not be built: context\.messages\[0\] \(user\) holds an image whose data is not base64/,
    );
    expect(server.requests.length - before).toBe(1);
  }, 10_000);
});

describe("chapter 05 · images on the Anthropic Messages wire", () => {
  it("Lab 5.6 · image blocks with a base64 source, in user content and inside tool_result content", () => {
    const before = structuredClone(context);
    expect(toAnthropicRequest(context, { model: "claude-test", maxTokens: 64 }).messages).toEqual(ANTHROPIC_MESSAGES);
    expect(context).toEqual(before);
  });

  it("Lab 5.6 · refused the same way: an image for a text-only model, a bad mimeType, data that is not base64", () => {
    expect(() => toAnthropicRequest(context, { model: "claude-test", maxTokens: 64, input: ["text"] })).toThrow(
      TEXT_ONLY,
    );
    for (const [, image, expected] of BAD_IMAGES) {
      expect(() => toAnthropicRequest(withImage(image), { model: "claude-test", maxTokens: 64 })).toThrow(expected);
    }
    expect(() => createAnthropicModel({ model: "m", maxTokens: 64, input: ["image"] as InputKind[] })).toThrow(
      /createAnthropicModel: input lists what the model takes/,
    );
  });

  it("Lab 5.6 · the Anthropic server receives exactly the images; a text-only model or a bad image sends nothing", async () => {
    server.reply(sseReply(ANTHROPIC_OK));
    const before = server.requests.length;
    const seen = await runTurn(anthropicModel(server.baseUrl), context);
    expect(seen.signature).toEqual(["start", "text_delta@0×4", "done:stop"]);
    expect(server.requests.length - before).toBe(1);
    const sent = JSON.parse(server.requests.at(-1)!.body);
    expect(sent).toEqual({ model: "claude-test", max_tokens: 64, stream: true, messages: ANTHROPIC_MESSAGES });

    const blind = await runTurn(anthropicModel(server.baseUrl, ["text"]), context);
    expect(blind.signature).toEqual(["error:error"]);
    expect(blind.message.errorMessage).toMatch(
      /^The request could not be built: context\.messages\[0\] \(user\) holds an image, and this model takes no images/,
    );
    expect(blind.message.errorDetails).toEqual({ kind: "request", retryable: false, attempts: 0 });

    const bad = await runTurn(anthropicModel(server.baseUrl), withImage({ type: "image", data: PNG }));
    expect(bad.message.errorMessage).toMatch(
      /holds an image whose mimeType is not an image media type \(got nothing\)/,
    );
    expect(server.requests.length - before).toBe(1);
  }, 10_000);
});
