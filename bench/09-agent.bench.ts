/**
 * Chapter 09 bench: the stateful `Agent`, @pi/course against @earendil-works/pi-agent-core 1.6's
 * `Agent`. DESIGN §5 bar: ours <= 0.5x its time, on both workloads:
 *
 * (a) 1,000 prompts of one turn each on one agent (the transcript grows to 2,000 messages);
 * (b) one prompt that runs 1,000 turns, each with one call of a no-op tool, then a text turn.
 *
 * Each agent has one listener that counts events (upstream awaits its listeners as we do). The
 * model and the tool are scripted the same way on both sides as in bench/07 (bench/scripted.ts).
 * pi-ai's faux provider is not used: it estimates usage from the whole prompt's text on every
 * call and re-chunks text randomly, so on (b) it would time the provider, not the Agent.
 * `convertToLlm` is the identity on both sides. Ours runs with `maxTurns: Infinity` (upstream has
 * no turn limit).
 */
import { Agent as OursAgent } from "@pi/course";
import type { Message } from "@pi/course";
import { Agent as UpstreamAgent } from "@earendil-works/pi-agent-core";
import { gcKind, measure, piModel, printTable } from "./harness.js";
import { checkWork, oursNoopTool, oursScriptedModel, upstreamNoopTool, upstreamScriptedStreamFn } from "./scripted.js";

const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 1_000);
const TURNS = Number(process.env.BENCH_TURNS ?? 1_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 11);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
/** A scavenge before each run, not a full GC (see harness.ts); `BENCH_GC=full` for the other. */
const GC = gcKind("minor");

/** Both sides, as one interface: a fresh agent with one counting listener, and its result. */
interface Side {
  /** A new agent whose model calls the no-op tool `toolTurns` times, then answers with text. */
  agent(toolTurns: number): { prompt(text: string): Promise<void>; messages(): number; events(): number };
}

const ours: Side = {
  agent(toolTurns) {
    const agent = new OursAgent({
      initialState: { systemPrompt: "bench", model: oursScriptedModel(toolTurns), tools: [oursNoopTool] },
      convertToLlm: (messages) => messages as Message[],
      maxTurns: Infinity,
    });
    let events = 0;
    agent.subscribe(() => {
      events++;
    });
    return { prompt: (text) => agent.prompt(text), messages: () => agent.state.messages.length, events: () => events };
  },
};

const upstreamModel = piModel("openai-completions", "bench");

const upstream: Side = {
  agent(toolTurns) {
    const agent = new UpstreamAgent({
      initialState: { systemPrompt: "bench", model: upstreamModel, tools: [upstreamNoopTool] } as any,
      convertToLlm: (messages: any) => messages,
      streamFn: upstreamScriptedStreamFn(toolTurns) as any,
    });
    let events = 0;
    agent.subscribe(() => {
      events++;
    });
    return { prompt: (text) => agent.prompt(text), messages: () => agent.state.messages.length, events: () => events };
  },
};

/** (a): PROMPTS one-turn prompts on one agent. */
async function prompts(side: Side): Promise<number> {
  const agent = side.agent(0);
  for (let i = 0; i < PROMPTS; i++) await agent.prompt("go");
  return agent.messages() * 1_000_000 + agent.events();
}

/** (b): one prompt that runs TURNS tool turns and a closing text turn. */
async function longRun(side: Side): Promise<number> {
  const agent = side.agent(TURNS);
  await agent.prompt("go");
  return agent.messages() * 1_000_000 + agent.events();
}

// ---------------------------------------------------------------- run

checkWork("prompts", "ours", await prompts(ours), PROMPTS * 2);
checkWork("prompts", "pi-agent-core 1.6", await prompts(upstream), PROMPTS * 2);
checkWork("long run", "ours", await longRun(ours), 1 + TURNS * 2 + 1);
checkWork("long run", "pi-agent-core 1.6", await longRun(upstream), 1 + TURNS * 2 + 1);

let ok = true;
const promptResults = await measure(
  [
    { name: "ours", run: () => prompts(ours) },
    { name: "pi-agent-core 1.6", run: () => prompts(upstream) },
  ],
  { warmup: WARMUP, runs: RUNS, gc: GC },
);
ok = printTable(`Agent: ${PROMPTS} one-turn prompts on one agent, one listener, ${GC} gc before each run`, promptResults, [
  { label: "ours / pi-agent-core 1.6", num: "ours", den: "pi-agent-core 1.6", bar: "<=", value: 0.5 },
]) && ok;
const longRunResults = await measure(
  [
    { name: "ours", run: () => longRun(ours) },
    { name: "pi-agent-core 1.6", run: () => longRun(upstream) },
  ],
  { warmup: WARMUP, runs: RUNS, gc: GC },
);
ok = printTable(`Agent: one run of ${TURNS} turns, one no-op tool call each, one listener, ${GC} gc before each run`, longRunResults, [
  { label: "ours / pi-agent-core 1.6", num: "ours", den: "pi-agent-core 1.6", bar: "<=", value: 0.5 },
]) && ok;
if (!ok) console.log("  (bar missed)");
