/**
 * Chapter 05 bench: provider speed where the user feels it (DESIGN §5, issue "a second real
 * provider", part 4). SSE bytes in memory → `fetch` → adapter → a reader that takes every event,
 * to the final message, for both wire formats (OpenAI Chat Completions, Anthropic Messages).
 *
 * Side by side, in one run, on the same bytes served by the same in-memory `fetch` (64 KB reads):
 * - floor: the bytes split into SSE frames by `readSseBatches` (a batch of frames per read, as
 *   the adapters read them) and `JSON.parse` of every `data:` payload, nothing else (what any
 *   adapter must do at least);
 * - ours: `createOpenAICompatibleModel` / `createAnthropicModel`, the reader looking at each
 *   `text_delta`, or at the partial arguments' `path` after every `toolcall_delta` (as a UI
 *   showing the path early would). Both adapters read the repeated delta frames without
 *   `JSON.parse` (`frame-template.ts`: one regular expression per frame once the stream's
 *   envelope is learned), so ours does less per frame than the floor's `JSON.parse`;
 * - pi-ai 1.6: its `openai-completions` / `anthropic-messages` provider given the same `fetch`,
 *   the reader looking at the same things (its partial arguments live on the block);
 * - for the OpenAI format, the Vercel AI SDK 5 (`ai` 5.0.277 + `@ai-sdk/openai-compatible`
 *   1.0.61, the last majors that install on Node 20: 7.x wants Node ≥ 22): `streamText`'s
 *   `fullStream`, given the same `fetch`. It offers no partial tool arguments (only the raw
 *   `tool-input-delta` text), so its reader counts that text instead of looking at a path.
 * Workloads: 1 MB of text in 4-character deltas (and 256 KB, for linearity); one streamed tool
 * call of 128 KB and of 2 MB (a `write` of a source file) in 4-character argument deltas.
 * Bars (issue 37): ours ≤ 1.5× the floor and ≥ 1.5× faster than pi-ai 1.6 on every workload; 4× the
 * input ≤ 4.5× the time. The Vercel AI SDK has no bar: its column is for comparison.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { jsonSchema, streamText, tool } from "ai";
import * as course from "@pi/course";
import { readSseBatches } from "@pi/course";
import type { Model } from "@pi/course";
import { stream as piAnthropic } from "@earendil-works/pi-ai/api/anthropic-messages";
import { stream as piCompletions } from "@earendil-works/pi-ai/api/openai-completions";
import { loadBaseline, measure, pairedRatio, piModel, printTable, type Ratio, type Result } from "./harness.js";

/** A build of @pi/course: this one, or `BENCH_BASELINE`'s (see harness.ts). */
type Course = typeof course;

const KB = 1024;
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// the streams
// ---------------------------------------------------------------------------------------------

const FILE_PATH = "src/generated/big-module.ts";
const LINE = 'export function f(a: string): string { return "x\\ty" + a; } // ünïcødé\n';

/** `{"path", "content"}` of about `size` bytes of JSON. */
function fileArguments(size: number): string {
  let content = "";
  while (JSON.stringify(content).length + 60 < size) content += LINE;
  return JSON.stringify({ path: FILE_PATH, content });
}

function pieces(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 4) out.push(text.slice(i, i + 4));
  return out;
}

interface Format {
  name: string;
  text(bytes: number): Uint8Array;
  toolCall(args: string): Uint8Array;
  /** The text or argument delta of one parsed `data:` payload (for the floor's checksum). */
  deltaOf(payload: any): string;
  ours(fetch: typeof globalThis.fetch, build: Course): Model;
  piAi(bytes: Uint8Array): AsyncIterable<any>;
  /** The Vercel AI SDK's reader of the same bytes, where it has an adapter for the format. */
  vercel?(bytes: Uint8Array): Promise<number>;
}

const openai: Format = {
  name: "openai",
  text(bytes) {
    const parts: string[] = [];
    for (let i = 0; i < bytes; i += 4)
      parts.push(`data: {"choices":[{"index":0,"delta":{"content":"abc "},"finish_reason":null}]}\n\n`);
    parts.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
    parts.push(
      'data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":9,"total_tokens":19}}\n\n',
      "data: [DONE]\n\n",
    );
    return encoder.encode(parts.join(""));
  },
  toolCall(args) {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const parts = [
      chunk({
        role: "assistant",
        tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "write", arguments: "" } }],
      }),
    ];
    for (const delta of pieces(args)) parts.push(chunk({ tool_calls: [{ index: 0, function: { arguments: delta } }] }));
    parts.push(
      chunk({}, "tool_calls"),
      'data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":9,"total_tokens":19}}\n\n',
      "data: [DONE]\n\n",
    );
    return encoder.encode(parts.join(""));
  },
  deltaOf(payload) {
    const delta = payload.choices?.[0]?.delta;
    return delta?.content ?? delta?.tool_calls?.[0]?.function?.arguments ?? "";
  },
  ours: (fetch, build) =>
    build.createOpenAICompatibleModel({
      baseUrl: "http://bench.invalid/v1",
      model: "bench",
      fetch,
      maxRetries: 0,
      maxResponseBytes: 2 ** 30,
    }),
  piAi: (bytes) =>
    piCompletions(piModel("openai-completions", "openai") as never, PI_CONTEXT as never, {
      apiKey: "bench",
      fetch: fetchOf(bytes) as never,
    }),
  vercel: readVercel,
};

const frame = (data: { type: string }) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
const START = frame({
  type: "message_start",
  message: { id: "msg_1", model: "bench", usage: { input_tokens: 10, output_tokens: 1 } },
} as never);
const STOP = (reason: string) =>
  frame({ type: "message_delta", delta: { stop_reason: reason }, usage: { output_tokens: 9 } } as never) +
  frame({ type: "message_stop" });

const anthropic: Format = {
  name: "anthropic",
  text(bytes) {
    const parts = [
      START,
      frame({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } } as never),
    ];
    for (let i = 0; i < bytes; i += 4)
      parts.push(
        frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "abc " } } as never),
      );
    parts.push(frame({ type: "content_block_stop", index: 0 } as never), STOP("end_turn"));
    return encoder.encode(parts.join(""));
  },
  toolCall(args) {
    const parts = [
      START,
      frame({
        type: "content_block_start",
        index: 0,
        content_block: { type: "tool_use", id: "toolu_1", name: "write", input: {} },
      } as never),
    ];
    for (const delta of pieces(args)) {
      parts.push(
        frame({
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: delta },
        } as never),
      );
    }
    parts.push(frame({ type: "content_block_stop", index: 0 } as never), STOP("tool_use"));
    return encoder.encode(parts.join(""));
  },
  deltaOf: (payload) => payload.delta?.text ?? payload.delta?.partial_json ?? "",
  ours: (fetch, build) =>
    build.createAnthropicModel({
      baseUrl: "http://bench.invalid",
      model: "bench",
      maxTokens: 4096,
      fetch,
      maxRetries: 0,
      maxResponseBytes: 2 ** 30,
    }),
  piAi: (bytes) =>
    piAnthropic(piModel("anthropic-messages", "anthropic") as never, PI_CONTEXT as never, {
      apiKey: "bench",
      fetch: fetchOf(bytes) as never,
    }),
};

const PI_CONTEXT = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };

function bodyOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 64 * KB));
      offset += 64 * KB;
    },
  });
}

function fetchOf(bytes: Uint8Array): typeof globalThis.fetch {
  return async () => new Response(bodyOf(bytes), { headers: { "content-type": "text/event-stream" } });
}

// ---------------------------------------------------------------------------------------------
// the readers
// ---------------------------------------------------------------------------------------------

/** What the reader does with partial arguments: look at the path, as a UI would. */
function pathLength(value: unknown): number {
  const path = value !== null && typeof value === "object" ? (value as { path?: unknown }).path : undefined;
  return typeof path === "string" ? path.length : 0;
}

/** What the readers saw of partial paths (kept, so the work cannot be optimised away). */
export let seen = 0;

/** Characters of text, or the final arguments' length as JSON. */
async function readOurs(format: Format, bytes: Uint8Array, build: Course = course): Promise<number> {
  let out = 0;
  for await (const event of format.ours(fetchOf(bytes), build).stream({ messages: [] })) {
    if (event.type === "text_delta") out += event.delta.length;
    else if (event.type === "toolcall_delta") seen += pathLength(event.partialArguments);
    else if (event.type === "toolcall_end") out += JSON.stringify(event.toolCall.arguments).length;
    else if (event.type === "error") throw new Error(`bench: ours (${format.name}): ${event.error.errorMessage}`);
  }
  return out;
}

async function readPiAi(format: Format, bytes: Uint8Array): Promise<number> {
  let out = 0;
  for await (const event of format.piAi(bytes)) {
    if (event.type === "text_delta") out += event.delta.length;
    else if (event.type === "toolcall_delta") {
      const block = event.partial.content[event.contentIndex];
      seen += pathLength(block?.type === "toolCall" ? block.arguments : undefined);
    } else if (event.type === "toolcall_end") out += JSON.stringify(event.toolCall.arguments).length;
    else if (event.type === "error") throw new Error(`bench: pi-ai 1.6 (${format.name}): ${event.error.errorMessage}`);
  }
  return out;
}

/** The Vercel AI SDK: text characters, or the final arguments' length as JSON. */
async function readVercel(bytes: Uint8Array): Promise<number> {
  const provider = createOpenAICompatible({
    name: "bench",
    baseURL: "http://bench.invalid/v1",
    apiKey: "bench",
    fetch: fetchOf(bytes),
    includeUsage: true,
  });
  const result = streamText({
    model: provider("bench"),
    prompt: "hi",
    maxRetries: 0,
    tools: {
      write: tool({
        description: "Writes a file.",
        inputSchema: jsonSchema<Record<string, unknown>>({ type: "object" }),
      }),
    },
  });
  let out = 0;
  for await (const part of result.fullStream) {
    if (part.type === "text-delta") out += part.text.length;
    else if (part.type === "tool-input-delta") seen += part.delta.length;
    else if (part.type === "tool-call") out += JSON.stringify(part.input).length;
    else if (part.type === "error") throw new Error(`bench: Vercel AI SDK: ${String(part.error)}`);
  }
  return out;
}

/** The floor: frames and one `JSON.parse` per payload; counts delta characters. */
async function readFloor(format: Format, bytes: Uint8Array): Promise<number> {
  let chars = 0;
  const response = await fetchOf(bytes)("http://bench.invalid");
  for await (const frames of readSseBatches(response.body!)) {
    for (const sse of frames) {
      if (sse.data === "[DONE]") return chars;
      chars += format.deltaOf(JSON.parse(sse.data)).length;
    }
  }
  return chars;
}

// ---------------------------------------------------------------------------------------------
// the runs
// ---------------------------------------------------------------------------------------------

/**
 * What to run, for quick iteration (every list comma-separated; unset = all):
 *   BENCH_FORMATS=openai,anthropic   BENCH_WORKLOADS=text,tool128k,tool2m
 *   BENCH_COLUMNS=floor,ours,pi-ai,vercel   BENCH_RUNS=9 (timed runs per case; warm-up is 3)
 * e.g. `BENCH_COLUMNS=floor,ours BENCH_FORMATS=anthropic npm run bench -- 05-providers`.
 * A ratio whose cases were not run is not printed. Linearity (4x input) is judged on wall time
 * and on CPU time (the CPU ratio barely moves with the machine's load).
 */
function choice(variable: string, all: readonly string[]): Set<string> {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === "") return new Set(all);
  const picked = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const unknown = picked.filter((s) => !all.includes(s));
  if (unknown.length > 0)
    throw new Error(`bench: ${variable} has ${unknown.join(", ")}; choose among ${all.join(", ")}`);
  return new Set(picked);
}
const FORMATS = choice("BENCH_FORMATS", ["openai", "anthropic"]);
const WORKLOADS = choice("BENCH_WORKLOADS", ["text", "tool128k", "tool2m"]);
const COLUMNS = choice("BENCH_COLUMNS", ["floor", "ours", "pi-ai", "vercel"]);
const RUNS = process.env.BENCH_RUNS ? Number(process.env.BENCH_RUNS) : undefined;
if (RUNS !== undefined && !(Number.isInteger(RUNS) && RUNS > 0))
  throw new Error("bench: BENCH_RUNS must be a positive integer");

/** The cases of the chosen columns (`column` is the key in BENCH_COLUMNS). */
function cases(list: { column: string; name: string; run: () => unknown }[]) {
  return list.filter((c) => COLUMNS.has(c.column));
}

/** The ratios whose two cases were run. */
function present(results: readonly Result[], ratios: readonly Ratio[]): Ratio[] {
  const names = new Set(results.map((r) => r.name));
  return ratios.filter((q) => names.has(q.num) && names.has(q.den));
}

/**
 * Linearity: 4x the input must take at most 4.5x the time. Both sizes run in the same rounds, so
 * the judged figure is the paired ratio (median over rounds of big / small, which cancels the
 * machine's slow phases); the ratios of the wall and CPU medians are printed beside it.
 */
function linearity(label: string, big: Result, small: Result): boolean {
  const paired = pairedRatio(big, small);
  const wall = big.median / small.median;
  const cpu = big.cpuMedian / small.cpuMedian;
  const ok = paired <= 4.5;
  console.log(
    `  ${label} (4x input): paired ${paired.toFixed(2)}x  wall ${wall.toFixed(2)}x  cpu ${cpu.toFixed(2)}x   bar <= 4.5  ${ok ? "ok" : "MISS"}`,
  );
  return ok;
}

/** One workload of a format: its bytes, what every reader must return, and how to name it. */
interface Workload {
  title: string;
  size: string;
  bytes: Uint8Array;
  expected: number;
  /** The same workload at a quarter of the size, run by ours in the same rounds for linearity. */
  quarter?: { size: string; bytes: Uint8Array; expected: number };
  runs: number;
}

/**
 * Floor, ours, pi-ai and the Vercel AI SDK on the workload's bytes (and ours on the quarter), in
 * the same rounds; prints the table, the ratios and the linearity. True when every bar run holds.
 */
async function compare(format: Format, w: Workload): Promise<boolean> {
  const results = await measure(
    cases([
      { column: "floor", name: "floor", run: () => readFloor(format, w.bytes) },
      { column: "ours", name: "ours", run: () => readOurs(format, w.bytes) },
      ...(baseline
        ? [{ column: "ours", name: "ours (baseline)", run: () => readOurs(format, w.bytes, baseline) }]
        : []),
      { column: "pi-ai", name: "pi-ai 1.6", run: () => readPiAi(format, w.bytes) },
      ...(format.vercel ? [{ column: "vercel", name: "Vercel AI 5", run: () => format.vercel!(w.bytes) }] : []),
      ...(w.quarter
        ? [{ column: "ours", name: `ours ${w.quarter.size}`, run: () => readOurs(format, w.quarter!.bytes) }]
        : []),
    ]),
    { warmup: 3, runs: RUNS ?? w.runs, gc: "minor" },
  );
  for (const r of results) {
    const expected = r.name === `ours ${w.quarter?.size}` ? w.quarter!.expected : w.expected;
    if (r.last !== expected)
      throw new Error(`bench: ${r.name} lost content (${format.name}, ${w.title}): ${r.last} of ${expected}`);
  }
  let ok = printTable(
    `${format.name}: ${w.title}`,
    results,
    present(results, [
      { label: "ours / floor", num: "ours", den: "floor", bar: "<=", value: 1.5 },
      { label: "pi-ai 1.6 / ours", num: "pi-ai 1.6", den: "ours", bar: ">=", value: 1.5 },
      { label: "Vercel AI 5 / ours", num: "Vercel AI 5", den: "ours" },
      { label: "ours (baseline) / floor", num: "ours (baseline)", den: "floor" },
      { label: "ours / ours (baseline)", num: "ours", den: "ours (baseline)" },
    ]),
  );
  const big = results.find((r) => r.name === "ours");
  const small = results.find((r) => r.name === `ours ${w.quarter?.size}`);
  if (big && small && w.quarter) {
    const linear = linearity(`${format.name}, ours ${w.size} / ${w.quarter.size}`, big, small); // not `&&=`: it must print
    ok &&= linear;
  }
  return ok;
}

const baseline = await loadBaseline();

let allOk = true;
for (const format of [openai, anthropic].filter((f) => FORMATS.has(f.name))) {
  if (WORKLOADS.has("text")) {
    const text = await compare(format, {
      title: "1 MB of text in 4-character deltas, bytes → fetch → adapter → reader",
      size: "1 MB",
      bytes: format.text(1024 * KB),
      expected: 1024 * KB,
      quarter: { size: "256 KB", bytes: format.text(256 * KB), expected: 256 * KB },
      runs: 9,
    });
    allOk &&= text;
  }
  // Each tool call (its arguments' length as JSON is what every reader returns); with the 2 MB
  // call, ours on a 512 KB call in the same rounds, for linearity.
  for (const size of [
    ...(WORKLOADS.has("tool128k") ? [128 * KB] : []),
    ...(WORKLOADS.has("tool2m") ? [2048 * KB] : []),
  ]) {
    const args = fileArguments(size);
    const label = size >= 1024 * KB ? `${size / 1024 / KB} MB` : `${size / KB} KB`;
    const quarterArgs = size === 2048 * KB ? fileArguments(size / 4) : undefined;
    const call = await compare(format, {
      title: `one streamed tool call of ${label}, 4-character argument deltas`,
      size: label,
      bytes: format.toolCall(args),
      expected: args.length,
      ...(quarterArgs !== undefined && {
        quarter: { size: "512 KB", bytes: format.toolCall(quarterArgs), expected: quarterArgs.length },
      }),
      runs: size > 512 * KB ? 7 : 9,
    });
    allOk &&= call;
  }
}

console.log(`\n05-providers: ${allOk ? "every bar run holds" : "SOME BAR MISSED"}`);
