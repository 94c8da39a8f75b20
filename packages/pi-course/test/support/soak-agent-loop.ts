/**
 * Soak: the agent loop's fault-injection property (see agent-faults.ts) for many more runs than
 * `npm test` does. `npm run soak` at the root runs 100,000.
 *
 *   npx tsx packages/pi-course/test/support/soak-agent-loop.ts [runs=100000] [seed=random]
 *
 * Prints the seed first, so a failure can be replayed with the same arguments.
 */
import fc from "fast-check";
import { runScenario, scenarioArbitrary, watchUnhandledRejections } from "./agent-faults.js";

const runs = Number(process.argv[2] ?? 100_000);
const seed = Number(process.argv[3] ?? Math.floor(Math.random() * 2 ** 31));
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error("usage: soak-agent-loop.ts [runs] [seed]   (positive integers)");
  process.exit(2);
}

console.log(`soak: agent loop fault injection, ${runs} runs, seed ${seed}`);
const started = performance.now();
const watch = watchUnhandledRejections();
let done = 0;
try {
  await fc.assert(
    fc.asyncProperty(scenarioArbitrary, async (scenario) => {
      const problems = await runScenario(scenario);
      await new Promise((resolve) => setImmediate(resolve));
      if (watch.reasons.length > 0) problems.push(`unhandled rejection: ${String(watch.reasons[0])}`);
      if (problems.length > 0) throw new Error(problems.join("\n"));
      done++;
      if (done % 10_000 === 0) {
        console.log(`  ${done} runs ok (${((performance.now() - started) / 1000).toFixed(1)} s)`);
      }
    }),
    { seed, numRuns: runs, includeErrorInReport: true },
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`soak: all ${runs} runs held every invariant (${seconds} s, seed ${seed})`);
} catch (error) {
  console.error(`soak: FAILED (seed ${seed})\n${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  watch.stop();
}
