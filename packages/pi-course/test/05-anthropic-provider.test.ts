/**
 * Chapter 05, extension lab: the Anthropic Messages adapter. The outbound translation is pure
 * and checked by deep equality; the inbound translation replays every recorded Anthropic stream
 * (test/fixtures/anthropic, see SOURCES.md there) under random chunking.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  AnthropicTurn,
  AssistantMessageEventStream,
  readSse,
  safeToolId,
  toAnthropicMessages,
  toAnthropicRequest,
} from "../src/index.js";
import type { AnthropicStreamEvent, AssistantContent, AssistantMessage, Context, ModelEvent, ToolCall } from "../src/index.js";
import { randomPieces, seededRandom } from "./support/sse-server.js";

const NOW = 1_700_000_000_000;
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
function wireBlock(file: string, index: number): { text: string; json: string; signature: string; data: string; id: string; name: string } {
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

interface Played {
  events: ModelEvent[];
  signature: string[];
  partials: unknown[];
  message: AssistantMessage;
}

/** Plays an SSE body through `readSse` in random pieces into one `AnthropicTurn`, as the adapter does. */
async function play(body: string, seed: number, maxPiece: number): Promise<Played> {
  const pieces = randomPieces(new TextEncoder().encode(body), seededRandom(seed), maxPiece);
  let i = 0;
  const bytes = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < pieces.length) controller.enqueue(pieces[i++]!);
      else controller.close();
    },
  });
  const stream = new AssistantMessageEventStream();
  const turn = new AnthropicTurn(stream, { provider: "anthropic", model: "claude-test", timestamp: NOW });
  turn.start();
  for await (const frame of readSse(bytes)) {
    const error = turn.event(JSON.parse(frame.data) as AnthropicStreamEvent);
    if (error !== undefined) turn.fail("error", error);
    if (turn.isEnded) break;
  }
  turn.finish();
  const events: ModelEvent[] = [];
  const partials: unknown[] = [];
  for await (const event of stream) {
    events.push(event);
    if (event.type === "toolcall_delta") partials.push(structuredClone(event.partialArguments));
  }
  return { events, signature: signatureOf(events), partials, message: await stream.result() };
}

/** `start`, `text_delta@0×8`, `toolcall_end@1`, `done:toolUse`…: run-length coded. */
function signatureOf(events: readonly ModelEvent[]): string[] {
  const out: [string, number][] = [];
  for (const event of events) {
    const name =
      event.type === "done" || event.type === "error"
        ? `${event.type}:${event.reason}`
        : event.type === "start"
          ? "start"
          : `${event.type}@${event.contentIndex}`;
    const last = out.at(-1);
    if (last !== undefined && last[0] === name) last[1]++;
    else out.push([name, 1]);
  }
  return out.map(([name, count]) => (count > 1 ? `${name}×${count}` : name));
}

function message(
  content: AssistantContent[],
  stopReason: AssistantMessage["stopReason"],
  usage: { input: number; output: number },
  extra: Partial<AssistantMessage> = {},
): AssistantMessage {
  return {
    role: "assistant",
    content,
    provider: "anthropic",
    model: "claude-test",
    usage: { input: usage.input, output: usage.output, totalTokens: usage.input + usage.output, cacheRead: 0, cacheWrite: 0 },
    stopReason,
    ...extra,
    timestamp: NOW,
  };
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
    signature: ["start", "text_delta@0×4", "toolcall_delta@1×3", "toolcall_delta@2×4", "toolcall_end@1", "toolcall_end@2", "done:toolUse"],
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
        [{ type: "text", text: "I'll update the issue list for you." }, call("anthropic-text-then-tool-use-no-args.chunks.txt", 1, {})],
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
      return message([text(file, 0), text(file, 3), text(file, 4)], "stop", { input: 12251, output: 153 }, {
        diagnostics: [
          'Not kept: server tool "web_search" (call srvtoolu_0133VxpFRjJZfTonrvnVaeeA); it is the provider\'s own content, not canonical content.',
          'Not kept: a "web_search_tool_result" block; it is the provider\'s own content, not canonical content.',
          "Not kept: citations on the text (the text itself is kept).",
        ],
      });
    },
  },
];

describe("chapter 05 · the Anthropic Messages adapter: inbound", () => {
  describe.each(RECORDED.map((c, i) => [c.file, c, i] as const))("replays %s", (_file, fixture, i) => {
    it("Lab 5.6 · under random chunking: exact events and final message", async () => {
      for (const [seed, maxPiece] of [[21 + i, 97], [500 + i, 7]] as const) {
        const played = await play(fixtureBody(fixture.file), seed, maxPiece);
        expect(played.signature).toEqual(fixture.signature);
        expect(played.message).toEqual(fixture.expected());
        const last = played.events.at(-1)!;
        expect(last.type === "done" ? last.message : last.type === "error" ? last.error : undefined).toBe(played.message);
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

const user = (text: string, timestamp = 1) => ({ role: "user" as const, content: [{ type: "text" as const, text }], timestamp });

describe("chapter 05 · the Anthropic Messages adapter: outbound", () => {
  const context: Context = {
    systemPrompt: "Be brief.",
    tools: [{ name: "read", description: "Reads a file.", parameters: { type: "object", properties: { path: { type: "string" } } } }],
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
      { role: "toolResult", toolCallId: "call:1/a", toolName: "read", content: [{ type: "text", text: "A" }], isError: false, timestamp: 3 },
      { role: "toolResult", toolCallId: "toolu_2", toolName: "read", content: [{ type: "text", text: "no such file" }], isError: true, timestamp: 4 },
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
    const request = toAnthropicRequest(deepFreeze(context), { model: "claude-test", maxTokens: 1024, thinking: { budgetTokens: 2048 } });
    expect(request).toEqual({
      model: "claude-test",
      max_tokens: 1024,
      stream: true,
      system: "Be brief.",
      thinking: { type: "enabled", budget_tokens: 2048 },
      tools: [{ name: "read", description: "Reads a file.", input_schema: { type: "object", properties: { path: { type: "string" } } } }],
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
            { type: "tool_result", tool_use_id: "toolu_2", content: [{ type: "text", text: "no such file" }], is_error: true },
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
      { role: "toolResult", toolCallId: "functions.read:0", toolName: "read", content: [], isError: false, timestamp: 1 },
    ]);
    expect(messages).toEqual([{ role: "user", content: [{ type: "tool_result", tool_use_id: "functions_read_0", content: [] }] }]);
  });
});
