/**
 * Unhandled promise rejections, each blamed on the test that leaked it.
 *
 * A rejection nobody handled surfaces on the event loop, possibly after its test has ended: a
 * per-test listener (on in beforeEach, off in afterEach) then blames the NEXT test, and a handler
 * attached after the listener is gone prints Node's PromiseRejectionHandledWarning. So the
 * listeners here stay installed for the whole file: `unhandledRejection` records the rejection,
 * `rejectionHandled` forgets it (handled late is handled). After a test that failed, the check
 * waits FAILED_GRACE_MS for what it left behind (a red test often stops before awaiting a promise
 * that rejects later), so those rejections fail that test, not the next. A rejection is blamed on
 * the test its stack names (the frames in the test file, async frames included) and the message
 * says when it surfaced under another test's name; with no such frame it says it may come from an
 * earlier test. (Tracking each promise's creating test with async_hooks would be exact, but costs
 * 10x on promise-heavy tests.)
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeEach, expect } from "vitest";

interface Leak {
  reason: unknown;
  promise: Promise<unknown>;
}

/**
 * Installs the check for the calling test file (pass `import.meta.url`): after each test, any
 * rejection still unhandled fails it, with a message naming the test that leaked it.
 */
export function checkRejectionsPerTest(testFileUrl: string, settle: () => Promise<void> = macrotasks): void {
  const file = fileURLToPath(testFileUrl);
  const tests = testLines(readFileSync(file, "utf8"));
  const leaks: Leak[] = [];
  const onUnhandled = (reason: unknown, promise: Promise<unknown>): void => {
    leaks.push({ reason, promise });
  };
  const onHandled = (promise: Promise<unknown>): void => {
    const at = leaks.findIndex((l) => l.promise === promise);
    if (at >= 0) leaks.splice(at, 1);
  };
  beforeEach(() => {
    // installed once, for the whole file, by the first test
    if (!process.listeners("unhandledRejection").includes(onUnhandled)) {
      process.on("unhandledRejection", onUnhandled);
      process.on("rejectionHandled", onHandled);
    }
  });
  // ...and removed after the last test's afterEach: a process that runs another file next (the
  // proof's runner keeps its worker from one run to the next) must not hide that file's
  // rejections from vitest behind a listener of this one.
  afterAll(() => {
    process.off("unhandledRejection", onUnhandled);
    process.off("rejectionHandled", onHandled);
  });
  afterEach(async (context) => {
    await settle();
    // A test that failed half way often leaves promises behind that reject later (a timer in the
    // code under test): give them time to surface here, under the name of the test that left them.
    const failed = (context.task.result?.errors?.length ?? 0) > 0;
    if (failed) await new Promise((resolve) => setTimeout(resolve, FAILED_GRACE_MS));
    const found = leaks.splice(0);
    if (found.length === 0) return;
    const current = expect.getState().currentTestName ?? "this test";
    const lines = found.map(({ reason }) => {
      const origin = originOf(reason, basename(file), tests);
      const text = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
      if (origin === undefined && failed) {
        return `this test failed before it handled a promise that then rejected (${text}): await or catch it before asserting`;
      }
      if (origin === undefined) {
        return (
          `a rejected promise nobody awaited or caught (${text}) surfaced during this test; its stack names no ` +
          "test of this file. If an earlier test failed half way, it may have left that promise behind"
        );
      }
      const mine = current.endsWith(origin.title);
      return mine
        ? `this test leaked a rejected promise nobody awaited or caught (${text}), created at line ${origin.line}`
        : `the test "${origin.title}" (line ${origin.line}) leaked a rejected promise nobody awaited or caught ` +
            `(${text}); it surfaced after that test ended, while this one ran: fix that test, not this one`;
    });
    throw new Error(lines.join("\n"));
  });
}

/** How long the check waits after a FAILED test for the rejections it left behind. */
const FAILED_GRACE_MS = 200;

/** Two turns of the event loop: rejections of the test's last moments surface before the check. */
async function macrotasks(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 0));
  await new Promise((resolve) => setImmediate(resolve));
}

/** Where each test starts: `it("title"` / `test("title"` with its line, in file order. */
function testLines(source: string): { title: string; line: number }[] {
  const out: { title: string; line: number }[] = [];
  source.split("\n").forEach((text, i) => {
    const m = /\b(?:it|test)(?:\.\w+)*\(\s*(["'`])(.*?)\1/.exec(text);
    if (m) out.push({ title: m[2]!, line: i + 1 });
  });
  return out;
}

/** The test whose body holds the outermost frame of the test file in the rejection's stack. */
function originOf(
  reason: unknown,
  fileName: string,
  tests: { title: string; line: number }[],
): { title: string; line: number } | undefined {
  const stack = reason instanceof Error ? (reason.stack ?? "") : "";
  const escaped = fileName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const frames = [...stack.matchAll(new RegExp(`${escaped}:(\\d+):\\d+`, "g"))].map((m) => Number(m[1]));
  for (const line of frames.reverse()) {
    const test = tests.filter((t) => t.line <= line).at(-1);
    if (test) return { title: test.title, line };
  }
  return undefined;
}
