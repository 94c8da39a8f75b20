/**
 * Chapter 09 bench: the stateful `Agent`, @pi/course against @earendil-works/pi-agent-core 1.6's
 * `Agent`. DESIGN §5 bar: ours <= 0.5x its time, on both workloads:
 *
 * (a) 1,000 prompts of one turn each on one agent (the transcript grows to 2,000 messages);
 * (b) one prompt that runs 1,000 turns, each with one call of a no-op tool, then a text turn.
 *
 * Each agent has one listener that counts events (upstream awaits its listeners as we do). The
 * model is scripted the same way on both sides as in bench/07: each library's own event stream,
 * every event pushed before `stream()` returns (pi-ai adds the `toolcall_start` its loop expects).
 * pi-ai's faux provider is not used: it estimates usage from the whole prompt's text on every
 * call and re-chunks text randomly, so on (b) it would time the provider, not the Agent.
 * `convertToLlm` is the identity on both sides. Ours runs with `maxTurns: Infinity` (upstream has
 * no turn limit).
 */
import { Agent as OursAgent, AssistantMessageEventStream as OursStream } from "@pi/course";
import type { AgentTool as OursTool, AssistantMessage as OursMessage, Message, Model } from "@pi/course";
import { Agent as UpstreamAgent } from "@earendil-works/pi-agent-core";
import type { AgentTool as UpstreamTool } from "@earendil-works/pi-agent-core";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { measure, printTable } from "./harness.js";

const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 1_000);
const TURNS = Number(process.env.BENCH_TURNS ?? 1_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);

const schema = { type: "object", properties: { note: { type: "string" } }, required: [] } as const;

// ---------------------------------------------------------------- ours

const oursTool: OursTool<any, undefined> = {
  name: "noop",
  label: "No-op",
  description: "Does nothing.",
  parameters: schema as never,
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: undefined }),
};

/** Calls the no-op tool on the first `toolTurns` calls, then answers with text on every call. */
function oursModel(toolTurns: number): Model {
  let turn = 0;
  return {
    provider: "bench",
    id: "scripted",
    stream() {
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
      if (n < toolTurns) {
        const call = { type: "toolCall" as const, id: `call_${n}`, name: "noop", arguments: {} as unknown };
        partial.content.push(call);
        stream.push({ type: "toolcall_delta", contentIndex: 0, delta: "{}", partial });
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

function oursAgent(toolTurns: number): { agent: OursAgent; events: () => number } {
  const agent = new OursAgent({
    initialState: { systemPrompt: "bench", model: oursModel(toolTurns), tools: [oursTool] },
    convertToLlm: (messages) => messages as Message[],
    maxTurns: Infinity,
  });
  let events = 0;
  agent.subscribe(() => {
    events++;
  });
  return { agent, events: () => events };
}

async function oursPrompts(): Promise<number> {
  const { agent, events } = oursAgent(0);
  for (let i = 0; i < PROMPTS; i++) await agent.prompt("go");
  return agent.state.messages.length * 1_000_000 + events();
}

async function oursLongRun(): Promise<number> {
  const { agent, events } = oursAgent(TURNS);
  await agent.prompt("go");
  return agent.state.messages.length * 1_000_000 + events();
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

function upstreamStreamFn(toolTurns: number) {
  let turn = 0;
  return () => {
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
      timestamp: 0,
    };
    stream.push({ type: "start", partial });
    if (n < toolTurns) {
      const call = { type: "toolCall" as const, id: `call_${n}`, name: "noop", arguments: {} };
      partial.content.push(call);
      stream.push({ type: "toolcall_start", contentIndex: 0, partial });
      stream.push({ type: "toolcall_delta", contentIndex: 0, delta: "{}", partial });
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

function upstreamAgent(toolTurns: number): { agent: UpstreamAgent; events: () => number } {
  const agent = new UpstreamAgent({
    initialState: { systemPrompt: "bench", model: upstreamModel, tools: [upstreamTool] } as any,
    convertToLlm: (messages: any) => messages,
    streamFn: upstreamStreamFn(toolTurns) as any,
  });
  let events = 0;
  agent.subscribe(() => {
    events++;
  });
  return { agent, events: () => events };
}

async function upstreamPrompts(): Promise<number> {
  const { agent, events } = upstreamAgent(0);
  for (let i = 0; i < PROMPTS; i++) await agent.prompt("go");
  return agent.state.messages.length * 1_000_000 + events();
}

async function upstreamLongRun(): Promise<number> {
  const { agent, events } = upstreamAgent(TURNS);
  await agent.prompt("go");
  return agent.state.messages.length * 1_000_000 + events();
}

// ---------------------------------------------------------------- run

/** Both sides must have done the whole work (pi-agent-core may add one system message). */
function check(workload: string, name: string, value: number, expected: number): void {
  const messages = Math.floor(value / 1_000_000);
  if (messages !== expected && messages !== expected + 1) {
    throw new Error(`${workload}, ${name}: expected ${expected} messages, got ${messages} (events ${value % 1_000_000})`);
  }
  console.log(`${workload}, ${name}: ${messages} messages, ${value % 1_000_000} events`);
}
check("prompts", "ours", await oursPrompts(), PROMPTS * 2);
check("prompts", "pi-agent-core 1.6", await upstreamPrompts(), PROMPTS * 2);
check("long run", "ours", await oursLongRun(), 1 + TURNS * 2 + 1);
check("long run", "pi-agent-core 1.6", await upstreamLongRun(), 1 + TURNS * 2 + 1);

let ok = true;
const prompts = await measure(
  [
    { name: "ours", run: oursPrompts },
    { name: "pi-agent-core 1.6", run: upstreamPrompts },
  ],
  { warmup: WARMUP, runs: RUNS },
);
ok = printTable(`Agent: ${PROMPTS} one-turn prompts on one agent, one listener`, prompts, [
  { label: "ours / pi-agent-core 1.6", num: "ours", den: "pi-agent-core 1.6", bar: "<=", value: 0.5 },
]) && ok;
const longRun = await measure(
  [
    { name: "ours", run: oursLongRun },
    { name: "pi-agent-core 1.6", run: upstreamLongRun },
  ],
  { warmup: WARMUP, runs: RUNS },
);
ok = printTable(`Agent: one run of ${TURNS} turns, one no-op tool call each, one listener`, longRun, [
  { label: "ours / pi-agent-core 1.6", num: "ours", den: "pi-agent-core 1.6", bar: "<=", value: 0.5 },
]) && ok;
if (!ok) console.log("  (bar missed)");
