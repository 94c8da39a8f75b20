import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runScenario, scenarioArbitrary, watchUnhandledRejections } from "./support/agent-faults.js";

/**
 * Property-based fault injection (DESIGN §6): random scripted runs with faults everywhere. For
 * every run: the stream ends, result() settles, the events follow the lifecycle grammar, every
 * tool call has exactly one result, nothing follows agent_end, no model call or queue poll after
 * an abort, no unhandled rejection; and the semantics: at most maxTurns model calls, no execute()
 * after the abort nor in a length turn, a unanimous terminate ends the run, and the run ends only
 * for a reason (see `endingViolations`). Seeded: a failure prints its seed and path to replay it.
 * The soak script runs the same property 100,000 times (`npm run soak`).
 */
const SEED = 20_260_702;
const RUNS = 2_000;

describe("chapter 07 · the agent loop under random faults", () => {
  it(
    `Lab 7.3 · invariant: ${RUNS} seeded random runs with faults in every hook all end well formed`,
    async () => {
      const watch = watchUnhandledRejections();
      try {
        await fc.assert(
          fc.asyncProperty(scenarioArbitrary, async (scenario) => {
            const problems = await runScenario(scenario);
            await new Promise((resolve) => setImmediate(resolve)); // let stray rejections surface
            if (watch.reasons.length > 0) problems.push(`unhandled rejection: ${String(watch.reasons[0])}`);
            if (problems.length > 0) throw new Error(problems.join("\n"));
          }),
          // the failing run's problems go into the report itself (not only into error.cause)
          { seed: SEED, numRuns: RUNS, includeErrorInReport: true },
        );
      } finally {
        watch.stop();
      }
      expect(watch.reasons).toEqual([]);
    },
    60_000,
  );
});
