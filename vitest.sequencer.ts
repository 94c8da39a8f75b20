/**
 * The order vitest starts test files in: the longest first, also on a fresh clone.
 *
 * vitest starts the files it has timings for longest first (its results cache under
 * node_modules/.vite), but a fresh clone (CI) has none: then it starts the largest files first,
 * and a small file that waits on servers for a minute (mcp.conformance.test.ts) started last and
 * ran alone at the end while the other workers sat idle. `LongestFirst` uses vitest's own order
 * whenever the cache holds any timing, and otherwise the durations below, then the rest by size.
 *
 * The durations are seconds per file from one whole `npm test` (load ~20, so only their order
 * matters); files under 10 s are left out. To refresh them:
 * `npx vitest run --project tests --reporter=json --outputFile=report.json` and read each file's
 * `endTime - startTime`. A stale entry only starts a file earlier or later; it changes no result.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const EXPECTED_SECONDS: Readonly<Record<string, number>> = {
  "packages/pi-course/test/00-prologue.test.ts": 112,
  "packages/pi-course/test/package.test.ts": 105,
  "packages/pi-course/test/cli.terminal.test.ts": 95,
  "packages/pi-course/test/cli.mcp.terminal.test.ts": 82,
  "packages/pi-course/test/10-session.test.ts": 65,
  "packages/pi-course/test/cli.mcp-oauth.test.ts": 62,
  "packages/pi-course-restate/test/restate.faults.test.ts": 61,
  "packages/pi-course-restate/test/package.test.ts": 61,
  "packages/pi-course/test/mcp.conformance.test.ts": 58,
  "packages/pi-course/test/interrupted-tool.test.ts": 50,
  "packages/pi-course/test/eval.cli.test.ts": 49,
  "packages/pi-course/test/frame-template.property.test.ts": 48,
  "packages/pi-course/test/scripted-model.memory.test.ts": 42,
  "packages/pi-course/test/mcp.outbound-attacks.test.ts": 39,
  "packages/pi-course/test/cli.models.terminal.test.ts": 38,
  "practice/test/practice-cli.test.ts": 38,
  "packages/pi-course/test/durable.terminal.test.ts": 35,
  "packages/pi-course-restate/test/restate.failover.test.ts": 32,
  "packages/pi-course/test/19-durable.test.ts": 32,
  "packages/pi-course/test/user-files.test.ts": 29,
  "packages/pi-course/test/durable.crash.test.ts": 28,
  "packages/pi-course/test/cli.untrusted-text.test.ts": 26,
  "packages/pi-course/test/cli.elicitation.terminal.test.ts": 25,
  "packages/pi-course/test/cli.model-route.test.ts": 24,
  "packages/pi-course/test/cli.resources.test.ts": 24,
  "packages/pi-course/test/mcp.hardening.test.ts": 24,
  "packages/pi-course/test/session.hardening.test.ts": 23,
  "packages/pi-course/test/layers.test.ts": 22,
  "packages/pi-course-restate/test/restate.versions.test.ts": 21,
  "packages/pi-course-restate/test/worker-bundle.test.ts": 21,
  "practice/test/generator.test.ts": 20,
  "packages/pi-course/test/17-mcp.test.ts": 19,
  "packages/pi-course/test/mcp.oauth.test.ts": 17,
  "packages/pi-course/test/readme.test.ts": 15,
  "packages/pi-course/test/session.lock.test.ts": 15,
  "packages/pi-course/test/05-openai-provider.test.ts": 15,
  "packages/pi-course/test/09-agent.property.test.ts": 14,
  "packages/pi-course/test/session-page.browser.test.ts": 13,
  "packages/pi-course/test/08-coding-tools.test.ts": 13,
  "packages/pi-course/test/cli.mcp-interrupt.terminal.test.ts": 12,
  "packages/pi-course/test/07-agent-loop.property.test.ts": 11,
  "packages/pi-course/test/session-view.terminal.test.ts": 11,
  "packages/pi-course-restate/test/restate.flood.test.ts": 11,
  "packages/pi-course/test/durable.hooks.test.ts": 10,
};

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const key = (spec: TestSpecification) => `${spec.project.name}:${relative(config.root, spec.moduleId)}`;
    if (files.some((spec) => cache.getFileTestResults(key(spec)) !== undefined)) return super.sort(files);
    const seconds = (spec: TestSpecification) =>
      EXPECTED_SECONDS[relative(config.root, spec.moduleId).replaceAll("\\", "/")] ?? 0;
    const size = (spec: TestSpecification) => cache.getFileStats(key(spec))?.size ?? 0;
    return [...files].sort((a, b) => {
      // vitest's own rule first: projects one after the other
      if (a.project.name !== b.project.name) return a.project.name < b.project.name ? -1 : 1;
      return seconds(b) - seconds(a) || size(b) - size(a);
    });
  }
}
