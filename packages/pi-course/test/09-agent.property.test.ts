import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { agentScenarioArbitrary, runAgentScenario } from "./support/agent-class-faults.js";
import { watchUnhandledRejections } from "./support/agent-faults.js";

/**
 * Property-based fault injection for the `Agent` (DESIGN §6): random lives of one agent, with
 * prompts, continues, steers, follow-ups and aborts arriving at random moments, from outside and
 * from inside listeners, a listener that throws, tools that fail, update late or terminate. Once
 * the agent is idle: every run followed the loop's grammar and runs never overlapped, the
 * transcript is exactly the runs' messages concatenated, every tool call has exactly one result,
 * nothing is pending or streaming, every queued message is in the transcript or still queued
 * (exactly once), no model call was made with an aborted signal, every listener throw was
 * reported by exactly one rejection, and no rejection went unhandled. Seeded.
 */
const SEED = 20_261_203;
const RUNS = process.env.PI_COURSE_PROOF ? 150 : 1_000;

describe("chapter 09 · the agent under random timing and faults", () => {
  it(`Lab 9.3 · invariant: ${RUNS} seeded random agent lives keep the transcript, the pairs and the queues whole`, async () => {
    const watch = watchUnhandledRejections();
    try {
      await fc.assert(
        fc.asyncProperty(agentScenarioArbitrary, async (scenario) => {
          const problems = await runAgentScenario(scenario);
          await new Promise((resolve) => setImmediate(resolve));
          if (watch.reasons.length > 0) problems.push(`unhandled rejection: ${String(watch.reasons[0])}`);
          if (problems.length > 0) throw new Error(problems.join("\n"));
        }),
        { seed: SEED, numRuns: RUNS, includeErrorInReport: true },
      );
    } finally {
      watch.stop();
    }
    expect(watch.reasons).toEqual([]);
  }, 120_000);
});
