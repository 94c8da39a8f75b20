/**
 * Chapter 05, extension lab: the Anthropic Messages adapter. The outbound translation is pure
 * and checked by deep equality; the inbound translation replays every recorded Anthropic stream
 * (test/fixtures/anthropic, see SOURCES.md there) under random chunking.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AnthropicTurn,
  PartialJsonParser,
  ScriptedModel,
  assistantMessage,
  createAnthropicModel,
  createOpenAICompatibleModel,
  toolResultMessage,
  userMessage,
  readSse,
  safeToolId,
  toAnthropicMessages,
  toAnthropicRequest,
} from "../src/index.js";
import type {
  AnthropicOptions,
  AnthropicStreamEvent,
  AssistantContent,
  AssistantMessage,
  Context,
  Model,
  ModelEvent,
  ToolCall,
} from "../src/index.js";
import {
  SseServer,
  dripReply,
  randomPieces,
  seededRandom,
  sseReply,
  stallReply,
  startSse,
  statusReply,
} from "./support/sse-server.js";
import {
  RecordingStream,
  expectedMessage,
  overHttp,
  signatureOf,
  turnRunner,
  type Turn,
} from "./support/model-turn.js";

const NOW = 1_700_000_000_000;
const KEY = "sk-ant-test-SECRET-0a1b2c3d4e5f";
const FIXTURES = new URL("./fixtures/anthropic/", import.meta.url);

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/** A recorded transcript as an SSE body (`.chunks.txt`: one JSON event per line, wrapped). */
function fixtureBody(name: string): string {
  const text = readFileSync(new URL(name, FIXTURES), "utf8");
  if (name.endsWith(".sse")) return text;
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => `data: ${line}\n\n`)
    .join("");
}

/** The JSON events of a transcript, for independent expectations. */
function fixtureEvents(name: string): Record<string, any>[] {
  return fixtureBody(name)
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, any>);
}

/** Independent oracle: what the wire says of block `index` (its deltas concatenated). */
function wireBlock(
  file: string,
  index: number,
): { text: string; json: string; signature: string; data: string; id: string; name: string } {
  const out = { text: "", json: "", signature: "", data: "", id: "", name: "" };
  for (const event of fixtureEvents(file)) {
    if (event.index !== index) continue;
    if (event.type === "content_block_start") {
      const block = event.content_block;
      out.text += block.text ?? block.thinking ?? "";
      out.data = block.data ?? "";
      out.id = block.id ?? "";
      out.name = block.name ?? "";
    }
    if (event.type === "content_block_delta") {
      const d = event.delta;
      out.text += d.text ?? d.thinking ?? "";
      out.json += d.partial_json ?? "";
      out.signature += d.signature ?? "";
    }
  }
  return out;
}

/** Plays an SSE body through `readSse` in random pieces into one `AnthropicTurn`, as the adapter does. */
async function play(body: string, seed: number, maxPiece: number): Promise<Turn> {
  const pieces = randomPieces(new TextEncoder().encode(body), seededRandom(seed), maxPiece);
  let i = 0;
  const bytes = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < pieces.length) controller.enqueue(pieces[i++]!);
      else controller.close();
    },
  });
  const stream = new RecordingStream();
  const turn = new AnthropicTurn(stream, { ...META, provider: "anthropic" });
  turn.start();
  for await (const frame of readSse(bytes)) {
    const error = turn.event(JSON.parse(frame.data) as AnthropicStreamEvent);
    if (error !== undefined) turn.fail("error", error);
    if (turn.isEnded) break;
  }
  turn.finish();
  return stream.turn(turn.partial);
}

const META = { provider: "anthropic", model: "claude-test", timestamp: NOW };

/** The final message: Anthropic reports cache reads and writes, zero when none. */
function message(
  content: AssistantContent[],
  stopReason: AssistantMessage["stopReason"],
  usage: { input: number; output: number },
  extra: Partial<AssistantMessage> = {},
): AssistantMessage {
  const { input, output } = usage;
  return expectedMessage(
    META,
    content,
    stopReason,
    { input, output, totalTokens: input + output, cacheRead: 0, cacheWrite: 0 },
    extra,
  );
}

const text = (file: string, index: number): AssistantContent => ({ type: "text", text: wireBlock(file, index).text });
const thinking = (file: string, index: number): AssistantContent => {
  const wire = wireBlock(file, index);
  return { type: "thinking", thinking: wire.text, signature: wire.signature };
};
const redacted = (file: string, index: number): AssistantContent => ({
  type: "thinking",
  thinking: "",
  redacted: true,
  signature: wireBlock(file, index).data,
});
const call = (file: string, index: number, args: Record<string, unknown>): ToolCall => {
  const wire = wireBlock(file, index);
  return { type: "toolCall", id: wire.id, name: wire.name, arguments: args };
};

// ---------------------------------------------------------------------------------------------
// the recorded streams
// ---------------------------------------------------------------------------------------------

/** Empty deltas (the API sends some, e.g. a first `partial_json: ""`) make no event. */
interface FixtureCase {
  file: string;
  signature: string[];
  expected: () => AssistantMessage;
}

const RECORDED: FixtureCase[] = [
  {
    file: "anthropic-text.sse",
    signature: ["start", "text_delta@0×4", "done:stop"],
    expected: () => message([{ type: "text", text: "- Captain\n- Scoop" }], "stop", { input: 17, output: 10 }),
  },
  {
    file: "anthropic-stop-max-tokens.sse",
    signature: ["start", "text_delta@0×7", "done:length"],
    expected: () => message([text("anthropic-stop-max-tokens.sse", 0)], "length", { input: 15, output: 50 }),
  },
  {
    file: "anthropic-text-then-parallel-tool-use.sse",
    signature: [
      "start",
      "text_delta@0×4",
      "toolcall_delta@1×3",
      "toolcall_delta@2×4",
      "toolcall_end@1",
      "toolcall_end@2",
      "done:toolUse",
    ],
    expected: () =>
      message(
        [
          { type: "text", text: "I'll retrieve the secrets for both passwords you provided." },
          call("anthropic-text-then-parallel-tool-use.sse", 1, { password: "mellon" }),
          call("anthropic-text-then-parallel-tool-use.sse", 2, { password: "radiance" }),
        ],
        "toolUse",
        { input: 416, output: 109 },
      ),
  },
  {
    file: "anthropic-text-then-tool-use-no-args.chunks.txt",
    signature: ["start", "text_delta@0×2", "toolcall_end@1", "done:toolUse"],
    expected: () =>
      message(
        [
          { type: "text", text: "I'll update the issue list for you." },
          call("anthropic-text-then-tool-use-no-args.chunks.txt", 1, {}),
        ],
        "toolUse",
        { input: 565, output: 48 },
      ),
  },
  {
    file: "anthropic-thinking-then-text.sse",
    signature: ["start", "thinking_delta@0×13", "text_delta@1×95", "done:stop"],
    expected: () =>
      message([thinking("anthropic-thinking-then-text.sse", 0), text("anthropic-thinking-then-text.sse", 1)], "stop", {
        input: 43,
        output: 282,
      }),
  },
  {
    file: "anthropic-thinking-then-tool-use.sse",
    signature: ["start", "thinking_delta@0×2", "toolcall_end@1", "done:toolUse"],
    expected: () =>
      message(
        [thinking("anthropic-thinking-then-tool-use.sse", 0), call("anthropic-thinking-then-tool-use.sse", 1, {})],
        "toolUse",
        { input: 598, output: 92 },
      ),
  },
  {
    file: "anthropic-tool-use-109-input-json-deltas.sse",
    signature: ["start", "toolcall_delta@0×108", "toolcall_end@0", "done:toolUse"],
    expected: () => {
      const file = "anthropic-tool-use-109-input-json-deltas.sse";
      return message([call(file, 0, JSON.parse(wireBlock(file, 0).json))], "toolUse", { input: 416, output: 154 });
    },
  },
  {
    file: "anthropic-redacted-thinking.sse",
    signature: ["start", "text_delta@2×15", "done:stop"],
    expected: () => {
      const file = "anthropic-redacted-thinking.sse";
      return message([redacted(file, 0), redacted(file, 1), text(file, 2)], "stop", { input: 92, output: 189 });
    },
  },
  {
    file: "anthropic-web-search-server-tool-citations.sse",
    signature: ["start", "text_delta@0×4", "text_delta@1×3", "text_delta@2×5", "done:stop"],
    expected: () => {
      const file = "anthropic-web-search-server-tool-citations.sse";
      return message(
        [text(file, 0), text(file, 3), text(file, 4)],
        "stop",
        { input: 12251, output: 153 },
        {
          diagnostics: [
            'Not kept: server tool "web_search" (call srvtoolu_0133VxpFRjJZfTonrvnVaeeA); it is the provider\'s own content, not canonical content.',
            'Not kept: a "web_search_tool_result" block; it is the provider\'s own content, not canonical content.',
            "Not kept: citations on the text (the text itself is kept).",
          ],
        },
      );
    },
  },
];

describe("chapter 05 · the Anthropic Messages adapter: inbound", () => {
  describe.each(RECORDED.map((c, i) => [c.file, c, i] as const))("replays %s", (_file, fixture, i) => {
    it("Lab 5.6 · under random chunking: exact events and final message", async () => {
      for (const [seed, maxPiece] of [
        [21 + i, 97],
        [500 + i, 7],
      ] as const) {
        const played = await play(fixtureBody(fixture.file), seed, maxPiece);
        expect(played.signature).toEqual(fixture.signature);
        expect(played.message).toEqual(fixture.expected());
        const last = played.events.at(-1)!;
        expect(last.type === "done" ? last.message : last.type === "error" ? last.error : undefined).toBe(
          played.message,
        );
      }
    });
  });

  it("Lab 5.6 · a tool call's live arguments only grow, and end as its arguments", async () => {
    const played = await play(fixtureBody("anthropic-tool-use-109-input-json-deltas.sse"), 3, 31);
    const final = (played.message.content[0] as ToolCall).arguments as { instructions: string };
    const seen = played.partials.map((p) => (p as { instructions?: string }).instructions ?? "");
    for (let k = 1; k < seen.length; k++) expect(seen[k]!.startsWith(seen[k - 1]!)).toBe(true);
    expect(seen.at(-1)).toBe(final.instructions);
  });
});

// ---------------------------------------------------------------------------------------------
// outbound
// ---------------------------------------------------------------------------------------------

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

const user = (text: string, timestamp = 1) => ({
  role: "user" as const,
  content: [{ type: "text" as const, text }],
  timestamp,
});

describe("chapter 05 · the Anthropic Messages adapter: outbound", () => {
  const context: Context = {
    systemPrompt: "Be brief.",
    tools: [
      {
        name: "read",
        description: "Reads a file.",
        parameters: { type: "object", properties: { path: { type: "string" } } },
      },
    ],
    messages: [
      user("Read a.txt and b.txt"),
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Two reads.", signature: "sig-1" },
          { type: "thinking", thinking: "", redacted: true, signature: "opaque" },
          { type: "thinking", thinking: "another provider's reasoning" },
          { type: "text", text: "" },
          { type: "text", text: "Reading both." },
          { type: "toolCall", id: "call:1/a", name: "read", arguments: { path: "a.txt" } },
          { type: "toolCall", id: "toolu_2", name: "read", arguments: { path: "b.txt" } },
        ],
        provider: "anthropic",
        model: "claude-test",
        usage: { input: 1, output: 1, totalTokens: 2 },
        stopReason: "toolUse",
        timestamp: 2,
      },
      {
        role: "toolResult",
        toolCallId: "call:1/a",
        toolName: "read",
        content: [{ type: "text", text: "A" }],
        isError: false,
        timestamp: 3,
      },
      {
        role: "toolResult",
        toolCallId: "toolu_2",
        toolName: "read",
        content: [{ type: "text", text: "no such file" }],
        isError: true,
        timestamp: 4,
      },
      user("Also, be quick.", 5),
      {
        role: "assistant",
        content: [{ type: "text", text: "half an answ" }],
        provider: "anthropic",
        model: "claude-test",
        usage: { input: 0, output: 0, totalTokens: 0 },
        stopReason: "aborted",
        errorMessage: "aborted",
        timestamp: 6,
      },
      user("Go on.", 7),
    ],
  };

  it("Lab 5.6 · maps system, thinking with signatures, calls, merged tool results and failed turns exactly", () => {
    const before = structuredClone(context);
    const request = toAnthropicRequest(deepFreeze(context), {
      model: "claude-test",
      maxTokens: 1024,
      thinking: { budgetTokens: 2048 },
    });
    expect(request).toEqual({
      model: "claude-test",
      max_tokens: 1024,
      stream: true,
      system: "Be brief.",
      thinking: { type: "enabled", budget_tokens: 2048 },
      tools: [
        {
          name: "read",
          description: "Reads a file.",
          input_schema: { type: "object", properties: { path: { type: "string" } } },
        },
      ],
      messages: [
        { role: "user", content: [{ type: "text", text: "Read a.txt and b.txt" }] },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "Two reads.", signature: "sig-1" },
            { type: "redacted_thinking", data: "opaque" },
            { type: "text", text: "Reading both." },
            { type: "tool_use", id: "call_1_a", name: "read", input: { path: "a.txt" } },
            { type: "tool_use", id: "toolu_2", name: "read", input: { path: "b.txt" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_1_a", content: [{ type: "text", text: "A" }] },
            {
              type: "tool_result",
              tool_use_id: "toolu_2",
              content: [{ type: "text", text: "no such file" }],
              is_error: true,
            },
            { type: "text", text: "Also, be quick." },
            { type: "text", text: "Go on." },
          ],
        },
      ],
    });
    expect(context).toEqual(before);
    // nothing of the context is shared with the request
    expect(request.tools![0]!.input_schema).not.toBe(context.tools![0]!.parameters);
    const use = request.messages[1]!.content[3] as { input: unknown };
    expect(use.input).not.toBe((context.messages[1]!.content as ToolCall[])[5]!.arguments);
  });

  it("Lab 5.6 · tool-call ids are made safe the same way on both sides, and stay distinct when they were", () => {
    expect(safeToolId("call_abc-123")).toBe("call_abc-123");
    expect(safeToolId("functions.read:0")).toBe("functions_read_0");
    expect(safeToolId("x".repeat(80))).toHaveLength(64);
    expect(safeToolId("")).toBe("_");
    const messages = toAnthropicMessages([
      {
        role: "toolResult",
        toolCallId: "functions.read:0",
        toolName: "read",
        content: [],
        isError: false,
        timestamp: 1,
      },
    ]);
    expect(messages).toEqual([
      { role: "user", content: [{ type: "tool_result", tool_use_id: "functions_read_0", content: [] }] },
    ]);
  });

  it("Lab 5.6 · a user message with nothing to send (only empty text) is left out, never sent empty", () => {
    const answer = assistantMessage([{ type: "text", text: "Hello." }], "stop", { timestamp: 2 });
    expect(toAnthropicMessages([user("hi"), answer, user("", 3)])).toEqual([
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "assistant", content: [{ type: "text", text: "Hello." }] },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// over HTTP
// ---------------------------------------------------------------------------------------------

const runTurn = turnRunner(KEY);

function modelAt(baseUrl: string, extra: Partial<AnthropicOptions> = {}): Model {
  return createAnthropicModel({
    baseUrl,
    model: "claude-test",
    apiKey: KEY,
    maxTokens: 4096,
    now: () => NOW,
    retryBaseDelayMs: 5,
    ...extra,
  });
}

const anthropicError = (type: string, message: string) => JSON.stringify({ type: "error", error: { type, message } });
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const HEAD =
  frame("message_start", { type: "message_start", message: { usage: { input_tokens: 5, output_tokens: 1 } } }) +
  frame("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }) +
  frame("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hel" } });

describe("chapter 05 · the Anthropic Messages adapter over HTTP", () => {
  let server: SseServer;
  beforeAll(async () => {
    server = await SseServer.start();
  });
  afterAll(async () => {
    await server.close();
  });

  it("Lab 5.6 · posts the translated request to {baseUrl}/v1/messages with x-api-key and anthropic-version", async () => {
    server.reply(sseReply(fixtureBody("anthropic-text.sse")));
    const context: Context = { systemPrompt: "sys", messages: [user("hi")] };
    const before = server.requests.length;
    const turn = await runTurn(modelAt(server.baseUrl, { headers: { "anthropic-beta": "x" } }), context);
    expect(turn.signature).toEqual(["start", "text_delta@0×4", "done:stop"]);
    const request = server.requests[before]!;
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/v1/messages");
    expect(request.headers["x-api-key"]).toBe(KEY);
    expect(request.headers["anthropic-version"]).toBe("2023-06-01");
    expect(request.headers["anthropic-beta"]).toBe("x");
    expect(request.headers.authorization).toBeUndefined();
    expect(JSON.parse(request.body)).toEqual(toAnthropicRequest(context, { model: "claude-test", maxTokens: 4096 }));
  }, 10_000);

  describe.each(RECORDED.map((c, i) => [c.file, c, i] as const))("replays %s", (_file, fixture, i) => {
    it("Lab 5.6 · over HTTP in random pieces (LF, then CRLF): exact events and final message", async () => {
      for (const [body, seed, maxPiece] of [
        [fixtureBody(fixture.file), 40 + i, 97],
        [fixtureBody(fixture.file).replace(/\n/g, "\r\n"), 90 + i, 13],
      ] as const) {
        server.reply(sseReply(body, { seed, maxPiece }));
        const turn = await runTurn(modelAt(server.baseUrl));
        expect(turn.signature).toEqual(fixture.signature);
        expect(turn.message).toEqual(overHttp({ ...fixture.expected(), provider: "anthropic" }));
      }
    }, 20_000);
  });

  it("Lab 5.6 · repeated delta frames are read by a template, not JSON.parse: the same turn as parsing every frame", async () => {
    const kinds = [
      ["input_json_delta", "partial_json"],
      ["text_delta", "text"],
    ] as const;
    const deltaFrame = (index: number, kind: (typeof kinds)[number], value: string) =>
      JSON.stringify({ type: "content_block_delta", index, delta: { type: kind[0], [kind[1]]: value } });
    // Escapes, emoji and U+2028 in text and arguments, another block index, a frame in another key order.
    const argumentPieces = [String.raw`{"pa`, String.raw`th": "a\\b\u00e9\"`, String.raw`"}`]; // escapes in the JSON text
    const body =
      frame("message_start", { type: "message_start", message: { usage: { input_tokens: 5, output_tokens: 1 } } }) +
      frame("content_block_start", {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      }) +
      ['x"y', "\\", "\u2028 é", "😀"]
        .map((t) => `event: content_block_delta\ndata: ${deltaFrame(0, kinds[1], t)}\n\n`)
        .join("") +
      frame("content_block_stop", { type: "content_block_stop", index: 0 }) +
      frame("content_block_start", {
        type: "content_block_start",
        index: 12,
        content_block: { type: "tool_use", id: "toolu_1", name: "write", input: {} },
      }) +
      argumentPieces.map((t) => `event: content_block_delta\ndata: ${deltaFrame(12, kinds[0], t)}\n\n`).join("") +
      'event: content_block_delta\ndata: {"index":12,"type":"content_block_delta","delta":{"partial_json":"","type":"input_json_delta"}}\n\n' +
      frame("content_block_stop", { type: "content_block_stop", index: 12 }) +
      frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: "tool_use" },
        usage: { output_tokens: 9 },
      }) +
      frame("message_stop", { type: "message_stop" });
    const parsed = await play(body, 1, 4096);
    server.reply(sseReply(body, { seed: 8, maxPiece: 37 }));
    const turn = await runTurn(modelAt(server.baseUrl));
    expect(turn.signature).toEqual(parsed.signature);
    expect(turn.message).toEqual(overHttp({ ...parsed.message, provider: "anthropic" }));
    expect(turn.message.content).toEqual([
      { type: "text", text: 'x"y\\\u2028 é😀' },
      { type: "toolCall", id: "toolu_1", name: "write", arguments: { path: 'a\\bé"' } },
    ]);
    // A frame of the repeated look that is not JSON is reported as malformed.
    const delta = (data: string) => `event: content_block_delta\ndata: ${data}\n\n`;
    server.reply(
      sseReply(
        HEAD + delta(deltaFrame(0, kinds[1], "lo")) + delta(deltaFrame(0, kinds[1], "!").replace('"!"', '"!"?"')),
      ),
    );
    const broken = await runTurn(modelAt(server.baseUrl));
    expect(broken.message.stopReason).toBe("error");
    expect(broken.message.errorMessage).toMatch(/^The server sent a malformed event: /);
    expect(broken.message.content).toEqual([{ type: "text", text: "Hello" }]);
    // The turn's own template, for every delta kind and any strings: what JSON.parse gives, each
    // frame after the first read by the template (the learned object, its slot set).
    const kind = fc.constantFrom(
      ["text_delta", "text"],
      ["thinking_delta", "thinking"],
      ["input_json_delta", "partial_json"],
    );
    const strings = fc.oneof(
      fc.string({ unit: fc.constantFrom("a", "é", "😀", '"', "\\", "\n", "\u0000", "\u2028", "/", "}", ":") }),
      fc.string({ unit: "binary" }),
    );
    fc.assert(
      fc.property(
        fc.nat({ max: 999_999_999 }),
        kind,
        fc.array(
          strings.filter((s) => s !== ""),
          { minLength: 2, maxLength: 5 },
        ),
        (index, [type, key], values) => {
          const frames = values.map((value) =>
            JSON.stringify({ type: "content_block_delta", index, delta: { type, [key]: value } }),
          );
          const template = new AnthropicTurn(new RecordingStream(), { ...META, provider: "anthropic" }).frames;
          const learned = template.parse(frames[0]!);
          for (const data of frames) {
            const read = template.parse(data);
            if (read !== learned) expect(read, data).toBe(learned);
            if (JSON.stringify(read) !== JSON.stringify(JSON.parse(data)))
              expect(JSON.stringify(read)).toBe(JSON.stringify(JSON.parse(data)));
          }
        },
      ),
      { numRuns: 1000 },
    );
    // The API pads every delta frame with a varying run of spaces: a recorded stream's deltas are
    // still read by the template.
    const recorded = fixtureBody("anthropic-tool-use-109-input-json-deltas.sse")
      .split("\n")
      .filter((line) => line.startsWith("data: "));
    const padded = new AnthropicTurn(new RecordingStream(), { ...META, provider: "anthropic" }).frames;
    const returned = new Set<unknown>();
    let reused = 0;
    for (const line of recorded) {
      const data = line.slice("data: ".length);
      const read = padded.parse(data);
      if (returned.has(read)) reused++;
      returned.add(read);
      expect(JSON.stringify(read)).toBe(JSON.stringify(JSON.parse(data)));
    }
    expect(reused).toBeGreaterThanOrEqual(100);
  }, 20_000);

  it("Lab 5.6 · a streaming tool call looks the same from this adapter and from ScriptedModel: partialArguments on the event, arguments {} on the block", async () => {
    /** At each toolcall_delta: the block's text and arguments, and the event's partialArguments (copied). */
    const view = async (model: Model) => {
      const seen: { raw: string; arguments: unknown; partialArguments: unknown }[] = [];
      const stream = model.stream({ messages: [user("go")] });
      for await (const event of stream) {
        if (event.type !== "toolcall_delta") continue;
        const block = event.partial.content[event.contentIndex] as ToolCall;
        seen.push({
          raw: block.rawArguments ?? "",
          arguments: structuredClone(block.arguments),
          partialArguments: structuredClone(event.partialArguments),
        });
      }
      return { seen, final: await stream.result() };
    };
    const parsed = (text: string): unknown => {
      const parser = new PartialJsonParser();
      for (const ch of text) parser.push(ch);
      return parser.value;
    };
    server.reply(sseReply(fixtureBody("anthropic-tool-use-109-input-json-deltas.sse"), { seed: 3, maxPiece: 61 }));
    const wire = await view(modelAt(server.baseUrl));
    expect(wire.final.stopReason).toBe("toolUse");
    const call = wire.final.content.find((b): b is ToolCall => b.type === "toolCall")!;
    const scripted = await view(new ScriptedModel([assistantMessage([call], "toolUse")], { chunkSize: 7 }));
    for (const { seen } of [wire, scripted]) {
      expect(seen.length).toBeGreaterThan(5);
      for (const step of seen) {
        expect(step.arguments).toEqual({});
        expect(step.partialArguments).toEqual(parsed(step.raw));
      }
      expect(seen.at(-1)!.partialArguments).toEqual(call.arguments);
    }
    expect(scripted.final.content).toEqual([call]);
  }, 10_000);

  it("Lab 5.6 · HTTP errors keep Anthropic's message, type and status; 4xx is not retried, 529 and 429 are", async () => {
    server.reply(statusReply(400, anthropicError("invalid_request_error", `max_tokens: too large (key ${KEY})`)));
    const bad = await runTurn(modelAt(server.baseUrl));
    expect(bad.signature).toEqual(["error:error"]);
    expect(bad.message.errorMessage).toMatch(/^HTTP 400 .*max_tokens: too large \(key \[redacted\]\)/);
    expect(bad.message.errorDetails).toMatchObject({
      kind: "http",
      status: 400,
      code: "invalid_request_error",
      retryable: false,
      attempts: 1,
    });

    const before = server.requests.length;
    server
      .reply(statusReply(529, anthropicError("overloaded_error", "Overloaded")))
      .reply(
        statusReply(429, anthropicError("rate_limit_error", "slow down"), "application/json", { "retry-after": "0" }),
      )
      .reply(sseReply(fixtureBody("anthropic-text.sse")));
    const retried = await runTurn(modelAt(server.baseUrl));
    expect(retried.signature).toEqual(["start", "text_delta@0×4", "done:stop"]);
    expect(server.requests.length - before).toBe(3);
    expect(retried.message.attempts).toBe(3);

    server.reply(statusReply(529, anthropicError("overloaded_error", "Overloaded")));
    const gaveUp = await runTurn(modelAt(server.baseUrl, { maxRetries: 0 }));
    expect(gaveUp.message.errorDetails).toMatchObject({
      kind: "http",
      status: 529,
      code: "overloaded_error",
      retryable: true,
      attempts: 1,
    });
  }, 10_000);

  it("Lab 5.6 · an overloaded_error mid-stream ends the turn with the partial text, retryable, and is not retried", async () => {
    const before = server.requests.length;
    server.reply(
      sseReply(HEAD + frame("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })),
    );
    const turn = await runTurn(modelAt(server.baseUrl));
    expect(turn.signature).toEqual(["start", "text_delta@0", "error:error"]);
    expect(turn.message.content).toEqual([{ type: "text", text: "Hel" }]);
    expect(turn.message.errorMessage).toBe("The provider reported an error: Overloaded (overloaded_error)");
    expect(turn.message.errorDetails).toEqual({
      kind: "provider",
      code: "overloaded_error",
      retryable: true,
      attempts: 1,
    });
    expect(turn.message.usage).toMatchObject({ input: 5, output: 1 });
    expect(server.requests.length - before).toBe(1);
  }, 10_000);

  it("Lab 5.6 · a reset mid-stream, a stream without a stop reason, and a stall keep the partial text", async () => {
    server.reply(sseReply(HEAD, { then: "reset" }));
    const reset = await runTurn(modelAt(server.baseUrl));
    expect(reset.signature).toEqual(["start", "text_delta@0", "error:error"]);
    expect(reset.message.errorDetails?.kind).toBe("network");

    server.reply(sseReply(HEAD));
    const torn = await runTurn(modelAt(server.baseUrl));
    expect(torn.message.errorMessage).toBe("The stream ended before the model finished (no stop_reason was sent).");
    expect(torn.message.content).toEqual([{ type: "text", text: "Hel" }]);

    // Keep-alives for 2 s, then the end: the stall comes first. 800 ms leaves the headers room on a loaded machine.
    server.reply(dripReply(HEAD, (i) => (i < 100 ? ": keep-alive\n\n" : undefined), 20));
    const stalled = await runTurn(modelAt(server.baseUrl, { idleTimeoutMs: 800 }));
    expect(stalled.signature).toEqual(["start", "text_delta@0", "error:error"]);
    expect(stalled.message.errorDetails?.kind).toBe("stall");
    expect(stalled.message.content).toEqual([{ type: "text", text: "Hel" }]);
  }, 10_000);

  it("Lab 5.6 · every stop reason: end_turn / stop_sequence with calls → toolUse, pause_turn → stop, context window → length, refusal and unknown → error", async () => {
    const block = (index: number, content_block: unknown, delta: unknown) =>
      frame("content_block_start", { type: "content_block_start", index, content_block }) +
      frame("content_block_delta", { type: "content_block_delta", index, delta }) +
      frame("content_block_stop", { type: "content_block_stop", index });
    const said = block(0, { type: "text", text: "" }, { type: "text_delta", text: "Reading." });
    const read = block(
      1,
      { type: "tool_use", id: "toolu_1", name: "read", input: {} },
      { type: "input_json_delta", partial_json: '{"path": "a"}' },
    );
    const ending = (...deltas: unknown[]) =>
      deltas.map((data) => frame("message_delta", { type: "message_delta", ...(data as object) })).join("") +
      frame("message_stop", { type: "message_stop" });
    const stopped = (reason: string) => ending({ delta: { stop_reason: reason }, usage: { output_tokens: 7 } });
    const play = async (body: string) => {
      server.reply(sseReply(HEAD.slice(0, HEAD.indexOf("event: content_block_start")) + body));
      return runTurn(modelAt(server.baseUrl));
    };
    const usage = { input: 5, output: 7 };
    const readCall: ToolCall = { type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "a" } };

    for (const reason of ["end_turn", "stop_sequence"]) {
      const turn = await play(said + read + stopped(reason));
      expect(turn.signature).toEqual(["start", "text_delta@0", "toolcall_delta@1", "toolcall_end@1", "done:toolUse"]);
      expect(turn.message).toEqual(
        overHttp(
          message([{ type: "text", text: "Reading." }, readCall], "toolUse", usage, {
            diagnostics: [`stop_reason was "${reason}" but the message has tool calls; treated as "tool_use".`],
          }),
        ),
      );
    }

    const paused = await play(said + stopped("pause_turn"));
    expect(paused.signature).toEqual(["start", "text_delta@0", "done:stop"]);
    expect(paused.message).toEqual(
      overHttp(
        message([{ type: "text", text: "Reading." }], "stop", usage, {
          diagnostics: [
            'stop_reason "pause_turn": the server paused a long-running turn; send the conversation back to let it go on.',
          ],
        }),
      ),
    );

    const full = await play(said + read + stopped("model_context_window_exceeded"));
    expect(full.signature).toEqual(["start", "text_delta@0", "toolcall_delta@1", "done:length"]);
    expect(full.message).toEqual(
      overHttp(
        message(
          [
            { type: "text", text: "Reading." },
            { ...readCall, arguments: {}, rawArguments: '{"path": "a"}' },
          ],
          "length",
          usage,
        ),
      ),
    );

    // The explanation of a refusal stays when a later message_delta only updates the usage.
    const explained = ending(
      { delta: { stop_reason: "refusal", stop_details: { type: "refusal", explanation: "Not allowed." } } },
      { usage: { output_tokens: 7 } },
    );
    for (const [body, errorMessage] of [
      [said + explained, 'The model refused to go on (stop_reason "refusal"): Not allowed.'],
      [said + stopped("refusal"), 'The model refused to go on (stop_reason "refusal").'],
      [said + stopped("new_reason"), 'The provider ended the turn with stop_reason "new_reason".'],
    ] as const) {
      const turn = await play(body);
      expect(turn.signature).toEqual(["start", "text_delta@0", "error:error"]);
      const code = body.includes("new_reason") ? "new_reason" : "refusal";
      expect(turn.message).toEqual(
        overHttp(
          message([{ type: "text", text: "Reading." }], "error", usage, {
            errorMessage,
            errorDetails: { kind: "provider", code, retryable: false, attempts: 1 },
          }),
        ),
      );
    }
  }, 10_000);

  it("Lab 5.6 · a stop reason stays when later message_delta events carry none (null, empty, no delta, no usage)", async () => {
    const body =
      frame("message_start", { type: "message_start", message: { id: "msg_1" } }) + // no usage yet
      frame("content_block_start", {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      }) +
      frame("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: "Hi" },
      }) +
      frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: 2 },
      }) +
      frame("message_delta", { type: "message_delta", delta: { stop_reason: null }, usage: { input_tokens: 4 } }) +
      frame("message_delta", { type: "message_delta", delta: { stop_reason: "" } }) +
      frame("message_delta", { type: "message_delta", usage: { output_tokens: 3 } }) +
      frame("message_stop", { type: "message_stop" });
    server.reply(sseReply(body));
    const turn = await runTurn(modelAt(server.baseUrl));
    expect(turn.signature).toEqual(["start", "text_delta@0", "done:stop"]);
    expect(turn.message).toEqual(overHttp(message([{ type: "text", text: "Hi" }], "stop", { input: 4, output: 3 })));
  }, 10_000);

  it("Lab 5.6 · pings are ignored, each unknown event type is noted once, a message_start without a message is read", async () => {
    const body =
      frame("message_start", { type: "message_start" }) +
      frame("ping", { type: "ping" }) +
      frame("message_annotation", { type: "message_annotation", note: 1 }) +
      frame("content_block_start", {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      }) +
      frame("message_annotation", { type: "message_annotation", note: 2 }) +
      frame("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: "Hi" },
      }) +
      frame("ping", { type: "ping" }) +
      frame("usage_report", { type: "usage_report" }) +
      frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: 2 },
      }) +
      frame("message_stop", { type: "message_stop" });
    server.reply(sseReply(body));
    const turn = await runTurn(modelAt(server.baseUrl));
    expect(turn.signature).toEqual(["start", "text_delta@0", "done:stop"]);
    expect(turn.message).toEqual(
      overHttp(
        message(
          [{ type: "text", text: "Hi" }],
          "stop",
          { input: 0, output: 2 },
          {
            diagnostics: [
              'Ignored an event of unknown type "message_annotation".',
              'Ignored an event of unknown type "usage_report".',
            ],
          },
        ),
      ),
    );
  }, 10_000);

  it("Lab 5.6 · message_stop ends the turn: what follows it is not read, though the server keeps the connection open", async () => {
    const body =
      HEAD +
      frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: 2 },
      }) +
      frame("message_stop", { type: "message_stop" }) +
      frame("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "!" } });
    // One write, then the response stays open.
    server.reply((res) => {
      startSse(res);
      res.write(body);
    });
    const turn = await runTurn(modelAt(server.baseUrl));
    expect(turn.signature).toEqual(["start", "text_delta@0", "done:stop"]);
    expect(turn.message).toEqual(overHttp(message([{ type: "text", text: "Hel" }], "stop", { input: 5, output: 2 })));
  }, 10_000);

  it("Lab 5.6 · an event that is not a JSON object (null, a number, a string) ends the turn with an error, partial text kept", async () => {
    for (const data of ["null", "42", '"ping"']) {
      server.reply(sseReply(`${HEAD}event: message_delta\ndata: ${data}\n\n`));
      const turn = await runTurn(modelAt(server.baseUrl));
      expect(turn.signature).toEqual(["start", "text_delta@0", "error:error"]);
      expect(turn.message).toEqual(
        overHttp(
          message(
            [{ type: "text", text: "Hel" }],
            "error",
            { input: 5, output: 1 },
            {
              errorMessage: "The provider reported an error: The server sent an event that is not a JSON object.",
              errorDetails: { kind: "provider", retryable: false, attempts: 1 },
            },
          ),
        ),
      );
    }
  }, 10_000);

  it("Lab 5.6 · an abort before the request, while waiting for headers, and mid-stream: aborted, nothing more", async () => {
    const pre = new AbortController();
    pre.abort();
    const before = server.requests.length;
    const early = await runTurn(modelAt(server.baseUrl), { messages: [] }, pre.signal);
    expect(early.signature).toEqual(["error:aborted"]);
    expect(server.requests.length).toBe(before);

    server.reply(stallReply);
    const waiting = new AbortController();
    setTimeout(() => waiting.abort(), 50);
    const headers = await runTurn(modelAt(server.baseUrl), { messages: [] }, waiting.signal);
    expect(headers.signature).toEqual(["error:aborted"]);

    server.reply(sseReply(HEAD, { then: "stall" }));
    const mid = new AbortController();
    const stream = modelAt(server.baseUrl).stream({ messages: [] }, { signal: mid.signal });
    const events: ModelEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === "text_delta") mid.abort();
    }
    expect(signatureOf(events)).toEqual(["start", "text_delta@0", "error:aborted"]);
    expect((await stream.result()).content).toEqual([{ type: "text", text: "Hel" }]);
  }, 10_000);

  it("Lab 5.6 · a transcript continues across providers: a tool turn on the OpenAI-compatible replay, the answer on Anthropic", async () => {
    const openai = await SseServer.start();
    try {
      const openaiBody = readFileSync(
        new URL("./fixtures/openai-chat/openai-gpt-4o-single-tool-call-54-arg-chunks.sse", import.meta.url),
        "utf8",
      );
      openai.reply(sseReply(openaiBody, { seed: 5 }));
      server.reply(sseReply(fixtureBody("anthropic-text.sse"), { seed: 6 }));
      const first = createOpenAICompatibleModel({
        baseUrl: openai.baseUrl,
        model: "gpt-4o",
        apiKey: KEY,
        now: () => NOW,
      });
      const tools = [{ name: "final_result", description: "Reports the answers.", parameters: { type: "object" } }];
      const context: Context = {
        systemPrompt: "sys",
        messages: [userMessage("Capital and weather of Mexico?", { timestamp: 1 })],
        tools,
      };
      const toolTurn = await runTurn(first, context);
      expect(toolTurn.message.stopReason).toBe("toolUse");
      const call = toolTurn.message.content[0] as ToolCall;
      expect(call.id).toBe("call_CCGIWaMeYWmxOQ91orkmTvzn");
      const result = toolResultMessage({
        toolCallId: call.id,
        toolName: call.name,
        content: "3 answers",
        timestamp: 2,
      });
      const next: Context = { ...context, messages: [...context.messages, toolTurn.message, result] };
      const before = server.requests.length;
      const answer = await runTurn(modelAt(server.baseUrl), next);
      expect(answer.message.content).toEqual([{ type: "text", text: "- Captain\n- Scoop" }]);
      // Anthropic received exactly the canonical context, in its own wire form.
      const sent = JSON.parse(server.requests[before]!.body);
      expect(sent).toEqual(toAnthropicRequest(next, { model: "claude-test", maxTokens: 4096 }));
      expect(sent.messages[1].content).toEqual([
        { type: "tool_use", id: call.id, name: "final_result", input: call.arguments },
      ]);
      expect(sent.messages[2].content).toEqual([
        { type: "tool_result", tool_use_id: call.id, content: [{ type: "text", text: "3 answers" }] },
      ]);
    } finally {
      await openai.close();
    }
  }, 20_000);

  it("Lab 5.6 · misuse throws at once: no maxTokens, a bad thinking budget, a non-URL base", () => {
    const make = (extra: Record<string, unknown>) => () =>
      createAnthropicModel({ model: "m", maxTokens: 2048, ...extra } as AnthropicOptions);
    expect(make({ maxTokens: undefined })).toThrow(/maxTokens is required by the Messages API/);
    expect(make({ thinking: { budgetTokens: 512 } })).toThrow(
      /budgetTokens must be an integer ≥ 1024 and below maxTokens \(2048\)/,
    );
    expect(make({ baseUrl: "api.anthropic.com" })).toThrow(/baseUrl must be an http\(s\) URL/);
    expect(make({ baseUrl: "https://api.anthropic.com/v1/messages" })).toThrow(
      'baseUrl is the server\'s base, without the endpoint: "https://api.anthropic.com" (the adapter adds /v1/messages)',
    );
    expect(make({ model: "" })).toThrow(/model must be a non-empty model id/);
  });

  it("Lab 5.6 · the checks hold at their edges: maxTokens 1 and a 1024 budget pass; 0, a budget of maxTokens, no model, a URL object, an endpoint do not", () => {
    const make = (extra: Record<string, unknown>) => () =>
      createAnthropicModel({ model: "m", maxTokens: 2048, ...extra } as AnthropicOptions);
    expect(make({ maxTokens: 1 })).not.toThrow();
    expect(make({ thinking: { budgetTokens: 1024 } })).not.toThrow();
    expect(make({ baseUrl: "https://gateway.example/messages/anthropic" })).not.toThrow();
    expect(make({ maxTokens: 0 })).toThrow(/maxTokens is required by the Messages API/);
    expect(make({ thinking: { budgetTokens: 2048 } })).toThrow(
      /budgetTokens must be an integer ≥ 1024 and below maxTokens \(2048\)/,
    );
    expect(make({ model: undefined })).toThrow(/model must be a non-empty model id/);
    expect(make({ baseUrl: new URL("https://api.anthropic.com") })).toThrow(/baseUrl must be an http\(s\) URL/);
    expect(make({ baseUrl: "proxy+https://api.anthropic.com" })).toThrow(/baseUrl must be an http\(s\) URL/);
    expect(make({ baseUrl: "https://api.anthropic.com/messages" })).toThrow(
      'baseUrl is the server\'s base, without the endpoint: "https://api.anthropic.com" (the adapter adds /v1/messages)',
    );
  });
});
