/**
 * Chapter 07 bench: agent-loop overhead, @pi/course `agentLoop` against
 * @earendil-works/pi-agent-core 1.6's `agentLoop`. DESIGN §5 bar: ours <= 0.5x its time.
 *
 * Workload: one run of TURNS turns, each a scripted assistant message with one call of a no-op
 * tool (so each turn is: model stream → validate → execute → result message → next turn), then
 * one closing text turn. The reader drains every event.
 *
 * The model is scripted the same way on both sides, with each library's own event stream:
 * `start`, the call's argument text as one delta, `toolcall_end`, `done` (pi-ai adds its
 * `toolcall_start`, which its loop expects), all pushed before `stream()` returns. The tool has
 * the same plain JSON Schema on both sides; `convertToLlm` is the identity on both sides.
 * So the difference is the loop: events, validation, tool execution, transcript handling.
 */
import { AssistantMessageEventStream as OursStream, agentLoop as oursLoop } from "@pi/course";
import type { AgentTool as OursTool, AssistantMessage as OursMessage, Context, Message, Model } from "@pi/course";
import { agentLoop as upstreamLoop } from "@earendil-works/pi-agent-core";
import type { AgentTool as UpstreamTool } from "@earendil-works/pi-agent-core";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { measure, printTable } from "./harness.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 1_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);

/** The same plain JSON Schema for both tools: an object with one optional string. */
const schema = { type: "object", properties: { note: { type: "string" } }, required: [] } as const;
const ARGS_JSON = "{}";

// ---------------------------------------------------------------- ours

const oursTool: OursTool<any, undefined> = {
  name: "noop",
  label: "No-op",
  description: "Does nothing.",
  parameters: schema as never,
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }),
};

function oursModel(): Model {
  let turn = 0;
  return {
    provider: "bench",
    id: "scripted",
    stream(_context: Context) {
      const stream = new OursStream();
      const n = turn++;
      const partial: OursMessage = {
        role: "assistant",
        content: [],
        provider: "bench",
        model: "scripted",
        usage: { input: 0, output: 0, totalTokens: 0 },
        stopReason: "stop",
        timestamp: 0,
      };
      stream.push({ type: "start", partial });
      if (n < TURNS) {
        const call = { type: "toolCall" as const, id: `call_${n}`, name: "noop", arguments: {} as unknown };
        partial.content.push(call);
        stream.push({ type: "toolcall_delta", contentIndex: 0, delta: ARGS_JSON, partial });
        stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial });
        partial.stopReason = "toolUse";
        stream.push({ type: "done", reason: "toolUse", message: partial });
      } else {
        partial.content.push({ type: "text", text: "done" });
        stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial });
        stream.push({ type: "done", reason: "stop", message: partial });
      }
      return stream;
    },
  };
}

async function runOurs(): Promise<number> {
  const stream = oursLoop(
    [{ role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }],
    { systemPrompt: "bench", messages: [], tools: [oursTool] },
    { model: oursModel(), convertToLlm: (messages) => messages as Message[], maxTurns: Infinity },
  );
  let events = 0;
  for await (const _event of stream) events++;
  const messages = await stream.result();
  return messages.length * 1_000_000 + events;
}

// ---------------------------------------------------------------- pi-agent-core 1.6

const upstreamTool: UpstreamTool<any> = {
  name: "noop",
  label: "No-op",
  description: "Does nothing.",
  parameters: schema as never,
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }),
};

const upstreamModel = {
  id: "scripted",
  name: "scripted",
  api: "openai-completions",
  provider: "bench",
  baseUrl: "http://127.0.0.1:9",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 1_000,
} as any;

function upstreamStreamFn() {
  let turn = 0;
  return (_model: unknown, _context: unknown) => {
    const stream = createAssistantMessageEventStream();
    const n = turn++;
    const partial: any = {
      role: "assistant",
      content: [],
      api: "openai-completions",
      provider: "bench",
      model: "scripted",
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "stop",
      timestamp: Date.now(),
    };
    stream.push({ type: "start", partial });
    if (n < TURNS) {
      const call = { type: "toolCall" as const, id: `call_${n}`, name: "noop", arguments: {} };
      partial.content.push(call);
      stream.push({ type: "toolcall_start", contentIndex: 0, partial });
      stream.push({ type: "toolcall_delta", contentIndex: 0, delta: ARGS_JSON, partial });
      stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial });
      partial.stopReason = "toolUse";
      stream.push({ type: "done", reason: "toolUse", message: partial });
    } else {
      partial.content.push({ type: "text", text: "done" });
      stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial });
      stream.push({ type: "done", reason: "stop", message: partial });
    }
    return stream;
  };
}

async function runUpstream(): Promise<number> {
  const stream = upstreamLoop(
    [{ role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }] as any,
    { systemPrompt: "bench", messages: [], tools: [upstreamTool] } as any,
    { model: upstreamModel, convertToLlm: (messages: any) => messages } as any,
    undefined,
    upstreamStreamFn() as any,
  );
  let events = 0;
  for await (const _event of stream) events++;
  const messages = await stream.result();
  return messages.length * 1_000_000 + events;
}

// ---------------------------------------------------------------- run

// Both must have done the whole run: 1 prompt + TURNS × (assistant + result) + 1 closing message.
const oursCheck = await runOurs();
const upstreamCheck = await runUpstream();
const expectedMessages = 1 + TURNS * 2 + 1;
for (const [name, check] of [["ours", oursCheck], ["pi-agent-core 1.6", upstreamCheck]] as const) {
  const messages = Math.floor(check / 1_000_000);
  // pi-agent-core also records a system message declaring the tools on the first turn
  if (messages !== expectedMessages && messages !== expectedMessages + 1) {
    throw new Error(`${name}: expected ${expectedMessages} messages, got ${messages} (events ${check % 1_000_000})`);
  }
  console.log(`${name}: ${messages} messages, ${check % 1_000_000} events per run`);
}

const results = await measure(
  [
    { name: "ours", run: runOurs },
    { name: "pi-agent-core 1.6", run: runUpstream },
  ],
  { warmup: WARMUP, runs: RUNS },
);
const ok = printTable(`agent loop: ${TURNS} turns, one no-op tool call each`, results, [
  { label: "ours / pi-agent-core 1.6", num: "ours", den: "pi-agent-core 1.6", bar: "<=", value: 0.5 },
]);
if (!ok) console.log("  (bar missed)");
