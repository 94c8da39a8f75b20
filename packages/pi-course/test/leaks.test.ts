/**
 * support/leaks.ts blames an unhandled rejection on the test that left it: a file of four tests
 * (one fails before awaiting a promise that rejects later, one is innocent and runs after it, one
 * handles a rejection late, one leaks a rejection at once) runs in a child vitest; each failure
 * names the right test, the innocent one passes, and Node prints no PromiseRejectionHandledWarning.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const HERE = dirname(fileURLToPath(import.meta.url));
const VITEST = resolve(HERE, "../../../node_modules/.bin/vitest");
const folder = mkdtempSync(join(tmpdir(), "pi-leaks-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const FILE = `import { expect, it } from "vitest";
import { checkRejectionsPerTest } from ${JSON.stringify(join(HERE, "support", "leaks.ts"))};

checkRejectionsPerTest(import.meta.url);

async function failsLater(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 30));
  throw new Error("late failure");
}

it("leaker · starts a promise, then fails before awaiting it", async () => {
  const pending = failsLater();
  expect(1).toBe(2);
  await pending;
});

it("innocent · waits a little", async () => {
  await new Promise((resolve) => setTimeout(resolve, 80));
});

it("handled late · no leak, no warning", async () => {
  const p = Promise.reject(new Error("handled later"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  await p.catch(() => undefined);
});

it("sync leaker · an async function that throws at once, never awaited", () => {
  void (async () => {
    throw new Error("at once");
  })();
});
`;

it("a leaked rejection fails the test that left it, not the next one; a late handler is no leak and prints no warning", async () => {
  writeFileSync(join(folder, "leak.test.ts"), FILE);
  const report = join(folder, "report.json");
  const output = await new Promise<string>((done) =>
    execFile(
      VITEST,
      ["run", "--root", folder, "--reporter=json", `--outputFile=${report}`],
      { cwd: folder, env: { ...process.env, NO_COLOR: "1", VITEST: undefined, VITEST_WORKER_ID: undefined } },
      (_error, stdout, stderr) => done(`${stdout}${stderr}`),
    ),
  );
  const results = JSON.parse(readFileSync(report, "utf8")) as {
    testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
  };
  const tests = Object.fromEntries(
    results.testResults[0]!.assertionResults.map((t) => [t.title.split(" · ")[0], t] as const),
  );
  expect(tests.leaker!.status).toBe("failed");
  expect(tests.leaker!.failureMessages.join("\n")).toContain(
    "this test failed before it handled a promise that then rejected (Error: late failure)",
  );
  expect(tests.innocent!.status).toBe("passed");
  expect(tests["handled late"]!.status).toBe("passed");
  expect(tests["sync leaker"]!.status).toBe("failed");
  expect(tests["sync leaker"]!.failureMessages.join("\n")).toContain(
    "this test leaked a rejected promise nobody awaited or caught (Error: at once), created at line 30",
  );
  expect(output).not.toContain("PromiseRejectionHandledWarning");
}, 60_000);
