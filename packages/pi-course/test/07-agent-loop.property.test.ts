import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runScenario, scenarioArbitrary, watchUnhandledRejections } from "./support/agent-faults.js";

/**
 * Property-based fault injection: random scripted runs with faults everywhere. For
 * every run: the stream ends, result() settles, the events follow the lifecycle grammar, every
 * tool call has exactly one result, nothing follows agent_end, no model call or queue poll after
 * an abort, no unhandled rejection; and the semantics: at most maxTurns model calls, no execute()
 * after the abort nor in a length turn, a unanimous terminate ends the run, and the run ends only
 * for a reason (see `endingViolations`).
 *
 * Seeded, so a run is repeatable. A failure prints `{ seed, path }`: replay exactly that case with
 * `PI_PROPERTY_SEED=<seed> PI_PROPERTY_PATH=<path> npx vitest run test/07-agent-loop.property.test.ts`.
 * One seed sees only its 2,000 cases: a steering-abort bug once hid from the fixed seed that other
 * seeds found within 300 to 2,300 runs. So CI (`CI` set, inside a git checkout) takes its seed from
 * the commit: every commit explores new cases, and a red CI run replays on the same commit (the
 * seed is printed on a failure). `PI_PROPERTY_SEED=random` draws a fresh seed locally, and
 * `PI_PROPERTY_RUNS` widens the run.
 * The soak script runs the same property 100,000 times (`npm run soak`).
 */
const FIXED_SEED = 20_260_702;
const seedSetting = process.env.PI_PROPERTY_SEED ?? (process.env.CI ? commitSeed() : undefined);
const SEED =
  seedSetting === undefined
    ? FIXED_SEED
    : seedSetting === "random"
      ? Math.floor(Math.random() * 2 ** 31)
      : Number(seedSetting);
const PATH = process.env.PI_PROPERTY_PATH;
const RUNS = Number(process.env.PI_PROPERTY_RUNS ?? 2_000);
if (!Number.isInteger(SEED) || !Number.isInteger(RUNS) || RUNS < 1) {
  throw new Error('PI_PROPERTY_SEED must be a whole number or "random", PI_PROPERTY_RUNS a positive whole number.');
}

/** A seed from the checked-out commit (its first 7 hex digits), or none outside a git checkout. */
function commitSeed(): string | undefined {
  try {
    const head = execFileSync("git", ["rev-parse", "HEAD"], {
      cwd: import.meta.dirname,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return String(Number.parseInt(head.slice(0, 7), 16));
  } catch {
    return undefined;
  }
}

describe("chapter 07 · the agent loop under random faults", () => {
  it(
    `Lab 7.4 · invariant: ${RUNS} seeded random runs with faults in every hook all end well formed`,
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
          {
            seed: SEED,
            numRuns: RUNS,
            includeErrorInReport: true,
            ...(PATH !== undefined && { path: PATH, endOnFailure: true }),
          },
        );
      } finally {
        watch.stop();
      }
      expect(watch.reasons).toEqual([]);
    },
    Math.max(60_000, RUNS * 30),
  );
});
