/**
 * Chapter 09 bench: the stateful `Agent`, @pi/course against @earendil-works/pi-agent-core 1.6's
 * `Agent`. Bar (issue 37): pi-agent-core 1.6 takes >= 1.5x our time, on both workloads:
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
 *
 * A scavenge, not a full GC, precedes each timed run: after a forced full GC V8 discards the
 * optimized code of both libraries (see harness.ts), and a run of a few tens of milliseconds then
 * times mostly its re-optimization. `BENCH_GC=full` measures that case too;
 * `BENCH_BASELINE=<dist>/index.js` adds another build of @pi/course to the same run.
 */
import { Agent as OursAgent } from "@pi/course";
import type { Message } from "@pi/course";
import { Agent as UpstreamAgent } from "@earendil-works/pi-agent-core";
import { gcKind, loadBaseline, measure, piModel, printTable } from "./harness.js";
import type { Case } from "./harness.js";
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

/** Our side, with the `Agent` of the current build or of `BENCH_BASELINE`'s. */
const oursWith = (Agent: typeof OursAgent): Side => ({
  agent(toolTurns) {
    const agent = new Agent({
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
});
const ours = oursWith(OursAgent);
const baselineBuild = await loadBaseline();
const baseline = baselineBuild === undefined ? undefined : oursWith(baselineBuild.Agent);

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
if (baseline !== undefined) {
  checkWork("prompts", "ours (baseline)", await prompts(baseline), PROMPTS * 2);
  checkWork("long run", "ours (baseline)", await longRun(baseline), 1 + TURNS * 2 + 1);
}

/** The cases of one workload: ours, pi-agent-core, and ours (baseline) if given. */
function cases(workload: (side: Side) => Promise<number>): Case[] {
  const all: Case[] = [
    { name: "ours", run: () => workload(ours) },
    { name: "pi-agent-core 1.6", run: () => workload(upstream) },
  ];
  if (baseline !== undefined) all.push({ name: "ours (baseline)", run: () => workload(baseline) });
  return all;
}
const RATIOS = [
  { label: "pi-agent-core 1.6 / ours", num: "pi-agent-core 1.6", den: "ours", bar: ">=" as const, value: 1.5 },
  ...(baseline === undefined
    ? []
    : [
        { label: "ours (baseline) / pi-agent-core 1.6", num: "ours (baseline)", den: "pi-agent-core 1.6" },
        { label: "ours / ours (baseline)", num: "ours", den: "ours (baseline)" },
      ]),
];

let ok = true;
const promptResults = await measure(cases(prompts), { warmup: WARMUP, runs: RUNS, gc: GC });
ok =
  printTable(
    `Agent: ${PROMPTS} one-turn prompts on one agent, one listener, ${GC} gc before each run`,
    promptResults,
    RATIOS,
  ) && ok;
const longRunResults = await measure(cases(longRun), { warmup: WARMUP, runs: RUNS, gc: GC });
ok =
  printTable(
    `Agent: one run of ${TURNS} turns, one no-op tool call each, one listener, ${GC} gc before each run`,
    longRunResults,
    RATIOS,
  ) && ok;
if (!ok) console.log("  (bar missed)");
