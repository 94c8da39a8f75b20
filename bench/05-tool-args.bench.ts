/**
 * Chapter 05 bench: streaming tool-call arguments, and text through the provider adapter.
 * DESIGN §5 bars: linear (4x input <= 4.5x time) and >= 4x faster than pi-ai 1.6's incremental
 * parser; text through adapter → reader linear, with no per-delta copy of the partial message.
 *
 * (a) tool arguments: a JSON document arrives in 4-character deltas; after every delta the
 *     partial value is read (its `path` member, as a UI showing the path early would).
 *     - ours: `PartialJsonParser.push(delta)` then `.value` (a live view, built in place);
 *     - pi-ai 1.6: `StreamingJsonParser.append(delta)` then `.snapshot()` (immutable snapshots,
 *       open path copied under a credit scheme);
 *     - pi-ai 0.73: `parseStreamingJson(text so far)` (re-parses everything: quadratic; run once,
 *       at 128 KB only).
 *     Two documents: "file" (`{"path", "content": one long string with escapes}`, what a write
 *     tool receives) and "edits" (`{"path", "edits": [{oldText, newText}, …]}`, many small
 *     members and a large open array).
 *
 *     Each size is measured twice. "steady": a local copy of the harness's loop that runs only a
 *     minor GC (scavenge) before each run, so one case's young garbage is not collected during
 *     the other's run; "after gc()": the shared harness, which forces a full GC before every run.
 *     That full collection makes V8 drop the optimized code of the parser and the reader
 *     (`--trace-opt` shows `push` re-optimized after every run), so a 2–40 ms workload then
 *     measures mostly tier-up on a loaded machine, for both parsers. Both tables are printed and
 *     checked against the bars.
 *
 * (b) text: 1 MB (and 256 KB, for linearity) of text in 4-character `content` deltas, as SSE
 *     bytes from an in-memory `fetch` (64 KB reads), through `createOpenAICompatibleModel` to a
 *     `for await` reader. Side by side: pi-ai 1.6's openai-completions provider given the same
 *     in-memory `fetch`; floor: the same bytes through `readSse` + `JSON.parse` only.
 */
import { PartialJsonParser, createOpenAICompatibleModel, readSse } from "@pi/course";
import { StreamingJsonParser } from "@earendil-works/pi-ai";
import { stream as piAi16Completions } from "@earendil-works/pi-ai/api/openai-completions";
import { parseStreamingJson } from "@mariozechner/pi-ai";
import { performance } from "node:perf_hooks";
import { measure, median, printTable, type Case, type MeasureOptions, type Result } from "./harness.js";

const KB = 1024;

// ---------------------------------------------------------------------------------------------
// (a) tool arguments
// ---------------------------------------------------------------------------------------------

const LINE = 'export function f(a: string): string { return "x\\ty" + a; } // ünïcødé\n';

function fileDocument(size: number): string {
  const head = '{"path":"src/generated/big-module.ts","content":"';
  let content = "";
  while (head.length + JSON.stringify(content).length < size) content += LINE;
  return `${head}${JSON.stringify(content).slice(1, -1)}"}`;
}

function editsDocument(size: number): string {
  const edits: { oldText: string; newText: string; line: number }[] = [];
  let length = 40;
  for (let i = 0; length < size; i++) {
    const edit = { oldText: `const value${i} = compute(${i});`, newText: `const value${i} = await computeAsync(${i}, "ctx");`, line: i * 3 };
    edits.push(edit);
    length += JSON.stringify(edit).length + 1;
  }
  return JSON.stringify({ path: "src/app.ts", edits });
}

function deltasOf(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 4) out.push(text.slice(i, i + 4));
  return out;
}

/** What the reader does with each partial value: look at the path, as a UI would. */
function readPath(value: unknown): number {
  if (value !== null && typeof value === "object") {
    const path = (value as { path?: unknown }).path;
    return typeof path === "string" ? path.length : 0;
  }
  return 0;
}

function ours(deltas: readonly string[]): unknown {
  const parser = new PartialJsonParser();
  let seen = 0;
  for (const delta of deltas) {
    parser.push(delta);
    seen += readPath(parser.value);
  }
  return [seen, parser.value];
}

function piAi16(deltas: readonly string[]): unknown {
  const parser = new StreamingJsonParser();
  let seen = 0;
  for (const delta of deltas) {
    parser.append(delta);
    seen += readPath(parser.snapshot());
  }
  return [seen, parser.snapshot()];
}

function piAi073(deltas: readonly string[]): unknown {
  let text = "";
  let seen = 0;
  let value: unknown;
  for (const delta of deltas) {
    text += delta;
    value = parseStreamingJson(text);
    seen += readPath(value);
  }
  return [seen, value];
}

function checkFinal(name: string, result: Result, doc: string): void {
  const value = (result.last as [number, unknown])[1];
  if (JSON.stringify(value) !== JSON.stringify(JSON.parse(doc))) {
    throw new Error(`bench: ${name} did not end with the document's value`);
  }
}

const minorGc = (globalThis as { gc?: (options?: { type: "minor" }) => void }).gc;

/** The harness's measurement loop (warm-up, round-robin, medians) with a minor GC, not a full one. */
async function measureSteady(cases: readonly Case[], options: MeasureOptions = {}): Promise<Result[]> {
  const warmup = options.warmup ?? 2;
  const runs = options.runs ?? 7;
  for (let i = 0; i < warmup; i++) for (const c of cases) await c.run();
  const wall = cases.map(() => [] as number[]);
  const cpu = cases.map(() => [] as number[]);
  const last: unknown[] = cases.map(() => undefined);
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < cases.length; k++) {
      minorGc?.({ type: "minor" });
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      last[k] = await cases[k]!.run();
      wall[k]!.push(performance.now() - start);
      const used = process.cpuUsage(cpu0);
      cpu[k]!.push((used.user + used.system) / 1000);
    }
  }
  return cases.map((c, k) => {
    const samples = wall[k]!.sort((a, b) => a - b);
    const cpuSamples = cpu[k]!.sort((a, b) => a - b);
    return {
      name: c.name,
      samples,
      median: median(samples),
      min: samples[0]!,
      max: samples.at(-1)!,
      last: last[k],
      cpuSamples,
      cpuMedian: median(cpuSamples),
    };
  });
}

const sizes = [
  { label: "128 KB", bytes: 128 * KB },
  { label: "512 KB", bytes: 512 * KB },
  { label: "2 MB", bytes: 2048 * KB },
];

let allOk = true;
for (const [kind, make] of [["file", fileDocument], ["edits", editsDocument]] as const) {
  for (const mode of ["steady", "after gc()"] as const) {
    const medians = new Map<string, number>();
    for (const size of sizes) {
      const doc = make(size.bytes);
      const deltas = deltasOf(doc);
      const cases: Case[] = [
        { name: "ours", run: () => ours(deltas) },
        { name: "pi-ai 1.6", run: () => piAi16(deltas) },
      ];
      const large = size.bytes > 512 * KB;
      const options = mode === "steady" ? { warmup: 5, runs: large ? 9 : 15 } : { warmup: 3, runs: large ? 5 : 9 };
      const results = mode === "steady" ? await measureSteady(cases, options) : await measure(cases, options);
      for (const r of results) checkFinal(`${r.name} ${kind} ${size.label}`, r, doc);
      medians.set(size.label, results[0]!.median);
      const tableOk = printTable(
        `[${mode}] tool arguments "${kind}", ${size.label} (${doc.length} chars, ${deltas.length} deltas of 4), read after every delta`,
        results,
        [{ label: "pi-ai 1.6 / ours", num: "pi-ai 1.6", den: "ours", bar: ">=", value: 4 }],
      );
      allOk &&= tableOk;
    }
    const t128 = medians.get("128 KB")!;
    const t512 = medians.get("512 KB")!;
    const t2m = medians.get("2 MB")!;
    console.log(`\n[${mode}] linearity "${kind}" (4x input; bar <= 4.5x time)`);
    for (const [label, ratio] of [["ours 512 KB / 128 KB", t512 / t128], ["ours 2 MB / 512 KB", t2m / t512]] as const) {
      const ok = ratio <= 4.5;
      allOk &&= ok;
      console.log(`  ${label.padEnd(22)}  ${ratio.toFixed(2).padStart(8)}x   bar <= 4.5  ${ok ? "ok" : "MISS"}`);
    }
  }
}

// pi-ai 0.73 re-parses the whole text after every delta: one run at 128 KB is enough to show it.
{
  const doc = fileDocument(128 * KB);
  const deltas = deltasOf(doc);
  const start = performance.now();
  piAi073(deltas);
  const ms = performance.now() - start;
  const oursStart = performance.now();
  ours(deltas);
  const oursMs = performance.now() - oursStart;
  console.log(
    `\npi-ai 0.73 parseStreamingJson, "file" 128 KB, one run: ${ms.toFixed(0)} ms ` +
      `(ours, one cold run: ${oursMs.toFixed(1)} ms; ratio ${(ms / oursMs).toFixed(0)}x). 2 MB skipped (quadratic).`,
  );
}

// ---------------------------------------------------------------------------------------------
// (b) text through the adapter
// ---------------------------------------------------------------------------------------------

function sseBody(textBytes: number): Uint8Array {
  const parts: string[] = [];
  const piece = "abc ";
  for (let i = 0; i < textBytes; i += 4) {
    parts.push(`data: {"choices":[{"index":0,"delta":{"content":"${piece}"},"finish_reason":null}]}\n\n`);
  }
  parts.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
  parts.push('data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":262144,"total_tokens":262154}}\n\n');
  parts.push("data: [DONE]\n\n");
  return new TextEncoder().encode(parts.join(""));
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 64 * KB));
      offset += 64 * KB;
    },
  });
}

async function throughAdapter(bytes: Uint8Array): Promise<number> {
  const model = createOpenAICompatibleModel({
    baseUrl: "http://bench.invalid/v1",
    model: "bench",
    fetch: async () => new Response(streamOf(bytes), { headers: { "content-type": "text/event-stream" } }),
  });
  let chars = 0;
  let partial: unknown;
  for await (const event of model.stream({ messages: [] })) {
    if (event.type === "text_delta") {
      chars += event.delta.length;
      if (partial !== undefined && partial !== event.partial) throw new Error("bench: partial was copied");
      partial = event.partial;
    } else if (event.type === "error") throw new Error(`bench: ${event.error.errorMessage}`);
  }
  return chars;
}

/** pi-ai 1.6's Chat Completions provider, on the same bytes through its `fetch` option. */
const PI_MODEL = {
  id: "bench",
  name: "bench",
  api: "openai-completions",
  provider: "openai",
  baseUrl: "http://bench.invalid/v1",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 4096,
};

async function throughPiAi16(bytes: Uint8Array): Promise<number> {
  const fetch = async () => new Response(streamOf(bytes), { headers: { "content-type": "text/event-stream" } });
  const events = piAi16Completions(PI_MODEL as never, { messages: [{ role: "user", content: "hi", timestamp: 0 }] } as never, {
    apiKey: "bench",
    fetch: fetch as never,
  });
  let chars = 0;
  for await (const event of events) {
    if (event.type === "text_delta") chars += event.delta.length;
    else if (event.type === "error") throw new Error(`bench: pi-ai 1.6 ${event.error.errorMessage}`);
  }
  return chars;
}

async function floor(bytes: Uint8Array): Promise<number> {
  let chars = 0;
  for await (const frame of readSse(streamOf(bytes))) {
    if (frame.data === "[DONE]") break;
    const chunk = JSON.parse(frame.data) as { choices: { delta: { content?: string } }[] };
    chars += chunk.choices[0]?.delta.content?.length ?? 0;
  }
  return chars;
}

{
  const small = sseBody(256 * KB);
  const large = sseBody(1024 * KB);
  const results = await measure(
    [
      { name: "adapter 1 MB", run: () => throughAdapter(large) },
      { name: "adapter 256 KB", run: () => throughAdapter(small) },
      { name: "pi-ai 1.6 adapter 1 MB", run: () => throughPiAi16(large) },
      { name: "floor 1 MB (readSse + JSON.parse)", run: () => floor(large) },
    ],
    { warmup: 2, runs: 7 },
  );
  if (results[0]!.last !== 1024 * KB || results[2]!.last !== 1024 * KB) throw new Error("bench: an adapter lost text");
  const textOk = printTable("text through the adapter to a reader, 4-char deltas (harness, after gc())", results, [
    { label: "1 MB / 256 KB (4x input)", num: "adapter 1 MB", den: "adapter 256 KB", bar: "<=", value: 4.5 },
    { label: "pi-ai 1.6 / ours (1 MB)", num: "pi-ai 1.6 adapter 1 MB", den: "adapter 1 MB" },
    { label: "ours / floor (1 MB)", num: "adapter 1 MB", den: "floor 1 MB (readSse + JSON.parse)" },
  ]);
  allOk &&= textOk;
}

console.log(`\n05-tool-args: ${allOk ? "every bar holds" : "SOME BAR MISSED"}`);
