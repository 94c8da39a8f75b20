import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { LongestFirst } from "./vitest.sequencer.js";

/** The course proof: every chapter's snapshot and practice folder, and the proof's own tests (`npm run proof`). */
const PROOF = ["practice/test/chapters.test.ts", "practice/test/proof-catches.test.ts"];

export default defineConfig({
  // Workspace packages import @pi/course from its sources (as tsconfig.json's `paths` says for tsc and tsx).
  resolve: {
    alias: [
      {
        find: /^@pi\/course$/,
        replacement: fileURLToPath(new URL("packages/pi-course/src/index.ts", import.meta.url)),
      },
      {
        find: /^@pi\/course-restate$/,
        replacement: fileURLToPath(new URL("packages/pi-course-restate/src/index.ts", import.meta.url)),
      },
    ],
  },
  test: {
    testTimeout: 10_000,
    hookTimeout: 60_000,
    // Unhandled rejections fail the run (vitest's default); keep it explicit.
    dangerouslyIgnoreUnhandledErrors: false,
    // Most test files spend their time waiting on the processes, servers and timers they test, so
    // more workers than cores keep both cores busy (vitest's default, one fewer than the cores, runs
    // one file at a time on 2 cores).
    maxWorkers: Math.max(4, availableParallelism() + 2),
    // The longest files first, on a fresh clone too (see vitest.sequencer.ts).
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: "tests",
          include: ["packages/*/test/**/*.test.ts", "practice/test/**/*.test.ts"],
          exclude: ["**/node_modules/**", ...PROOF],
        },
      },
      { extends: true, test: { name: "proof", include: PROOF } },
    ],
  },
});
