import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The longest files, started first, in this order: the course proof (minutes; it runs its own
 * child processes three at a time) and the proof's own tests. The other files run beside them.
 */
const FIRST = ["practice/test/chapters.test.ts", "practice/test/proof-catches.test.ts"];

/** Vitest's order (unknown files, then by duration or size), with FIRST moved to the front. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = FIRST.findIndex((file) => spec.moduleId.replace(/\\/g, "/").endsWith(`/${file}`));
      return index < 0 ? FIRST.length : index;
    };
    return sorted
      .map((spec, at) => ({ spec, at }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.at - b.at)
      .map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "practice/test/**/*.test.ts"],
    testTimeout: 10_000,
    hookTimeout: 60_000,
    // Unhandled rejections fail the run (vitest's default); keep it explicit.
    dangerouslyIgnoreUnhandledErrors: false,
    // Vitest's default is one worker fewer than the cores: one file at a time on 2 cores. Most
    // files spend their time waiting on the processes, servers and timers they test. The course
    // proof holds one worker for its whole run (its own child processes do the work), so with two
    // workers every other file queued behind one: 870 s of CPU in 675 s (1.3 cores busy of 2),
    // the other files' 676 s of tests one after the other. Three: the proof and two queues.
    maxWorkers: Math.max(3, availableParallelism() + 1),
    sequence: { sequencer: LongestFirst },
  },
});
