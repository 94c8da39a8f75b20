import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "practice/test/**/*.test.ts"],
    testTimeout: 10_000,
    hookTimeout: 60_000,
    // Unhandled rejections fail the run (vitest's default); keep it explicit.
    dangerouslyIgnoreUnhandledErrors: false,
  },
});
