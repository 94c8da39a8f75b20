/**
 * Chapter 07 bench: agent-loop overhead, @pi/course `agentLoop` against
 * @earendil-works/pi-agent-core 1.6's `agentLoop`. Bar (issue 37): pi-agent-core 1.6
 * takes >= 1.5x our time.
 *
 * Workload: one run of TURNS turns, each a scripted assistant message with one call of a no-op
 * tool (so each turn is: model stream → validate → execute → result message → next turn), then
 * one closing text turn. The reader drains every event.
 *
 * The model and the tool are scripted the same way on both sides (bench/scripted.ts);
 * `convertToLlm` is the identity on both sides. So the difference is the loop: events,
 * validation, tool execution, transcript handling.
 *
 * A scavenge, not a full GC, precedes each timed run: after a forced full GC V8 discards the
 * optimized code of both libraries (see harness.ts), and a run of a few tens of milliseconds then
 * times mostly its re-optimization. `BENCH_GC=full` measures that case too;
 * `BENCH_BASELINE=<dist>/index.js` adds another build of @pi/course to the same run.
 */
import { agentLoop as oursLoop } from "@pi/course";
import type { Message } from "@pi/course";
import { agentLoop as upstreamLoop } from "@earendil-works/pi-agent-core";
import { gcKind, loadBaseline, measure, piModel, printTable } from "./harness.js";
import type { Case, Ratio } from "./harness.js";
import { checkWork, oursNoopTool, oursScriptedModel, upstreamNoopTool, upstreamScriptedStreamFn } from "./scripted.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 1_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
/** A scavenge before each run, not a full GC (see harness.ts); `BENCH_GC=full` for the other. */
const GC = gcKind("minor");

/** Our run, with the `agentLoop` of the current build or of `BENCH_BASELINE`'s. */
async function runOurs(loop: typeof oursLoop = oursLoop): Promise<number> {
  const stream = loop(
    [{ role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }],
    { systemPrompt: "bench", messages: [], tools: [oursNoopTool] },
    { model: oursScriptedModel(TURNS), convertToLlm: (messages) => messages as Message[], maxTurns: Infinity },
  );
  let events = 0;
  for await (const _event of stream) events++;
  const messages = await stream.result();
  return messages.length * 1_000_000 + events;
}

const upstreamModel = piModel("openai-completions", "bench");

async function runUpstream(): Promise<number> {
  const stream = upstreamLoop(
    [{ role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 }] as any,
    { systemPrompt: "bench", messages: [], tools: [upstreamNoopTool] } as any,
    { model: upstreamModel, convertToLlm: (messages: any) => messages } as any,
    undefined,
    upstreamScriptedStreamFn(TURNS) as any,
  );
  let events = 0;
  for await (const _event of stream) events++;
  const messages = await stream.result();
  return messages.length * 1_000_000 + events;
}

// ---------------------------------------------------------------- run

// Both must have done the whole run: 1 prompt + TURNS × (assistant + result) + 1 closing message.
checkWork("long run", "ours", await runOurs(), 1 + TURNS * 2 + 1);
checkWork("long run", "pi-agent-core 1.6", await runUpstream(), 1 + TURNS * 2 + 1);
const baseline = await loadBaseline();
if (baseline !== undefined)
  checkWork("long run", "ours (baseline)", await runOurs(baseline.agentLoop), 1 + TURNS * 2 + 1);

const cases: Case[] = [
  { name: "ours", run: () => runOurs() },
  { name: "pi-agent-core 1.6", run: runUpstream },
];
const ratios: Ratio[] = [
  { label: "pi-agent-core 1.6 / ours", num: "pi-agent-core 1.6", den: "ours", bar: ">=", value: 1.5 },
];
if (baseline !== undefined) {
  cases.push({ name: "ours (baseline)", run: () => runOurs(baseline.agentLoop) });
  ratios.push(
    { label: "ours (baseline) / pi-agent-core 1.6", num: "ours (baseline)", den: "pi-agent-core 1.6" },
    { label: "ours / ours (baseline)", num: "ours", den: "ours (baseline)" },
  );
}
const results = await measure(cases, { warmup: WARMUP, runs: RUNS, gc: GC });
const ok = printTable(
  `agent loop: ${TURNS} turns, one no-op tool call each, ${GC} gc before each run`,
  results,
  ratios,
);
if (!ok) console.log("  (bar missed)");
