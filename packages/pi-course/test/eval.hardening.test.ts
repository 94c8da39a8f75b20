/**
 * Issue 41, item 17: the eval harness against an agent and a check that reach past their run. A
 * command's write to the top of the system's temporary folder (`/tmp/x`, whatever `TMPDIR`
 * says) is a protocol failure, as a write anywhere else outside the workspace; and a check's
 * child that left its process group (`setsid`) ends with the check, also when it holds the
 * check's output open.
 */
import { readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { caseModel, runtimeWire } from "../src/cli/eval-wiring.js";
import { loadCase } from "../src/eval/case-format.js";
import { runCase } from "../src/eval/run-case.js";
import { runCheck } from "../src/eval/run-check.js";
import type { RunRecord } from "../src/eval/run-record.js";
import { buildSuiteReport, formatSummary } from "../src/eval/suite-report.js";
import { bashThenAnswer, runRecord, writeCase } from "./support/eval-cases.js";
import { killQuietly, running } from "./support/processes.js";

let dir: string;
const strays: number[] = [];
beforeEach(async () => {
  // The real path: on macOS the temporary folder is a symlink (/var -> /private/var).
  dir = await realpath(await mkdtemp(path.join(tmpdir(), "pi-eval-hardening-")));
});
afterEach(async () => {
  for (const pid of strays.splice(0)) killQuietly(pid);
  await rm(dir, { recursive: true, force: true });
});

async function gone(pid: number, ms = 2000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (running(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return !running(pid);
}

/**
 * One offline run of a case whose agent runs `command`, watching the top of `shared` (a folder
 * of the test's own, so no other process writes at its top meanwhile) as the system's temporary
 * folder.
 */
async function runSharing(shared: string, command: string, runRoot: string) {
  await mkdir(shared);
  const evalCase = await loadCase(
    await writeCase(path.join(dir, "suite"), "case", { check: "exit 0", script: bashThenAnswer(command) }),
  );
  return runCase(evalCase, {
    repeat: 0,
    runRoot,
    model: await caseModel(evalCase, undefined, 0),
    wire: runtimeWire(undefined),
    sharedTemp: shared,
  });
}

it("a command's write to the top of the shared temporary folder is a protocol failure", async () => {
  const shared = path.join(dir, "shared-tmp");
  const record = await runSharing(shared, `echo scratch > ${shared}/scratch.py; echo ok`, path.join(dir, "run-0"));
  expect(record.status).toBe("protocol");
  expect(record.protocolProblems).toEqual([`written outside the workspace: ${shared}/scratch.py was created.`]);
}, 30_000);

it("a run that writes only where it may is not blamed for the shared folder", async () => {
  const shared = path.join(dir, "shared-tmp");
  // the run folder itself under the shared folder
  const record = await runSharing(shared, "echo a > inside.txt", path.join(shared, "run-0"));
  // the run folder appeared at the shared folder's top during the run: it is the run's own, not a problem
  expect(record.protocolProblems).toEqual([]);
  expect(record.status).toBe("passed");
}, 30_000);

for (const holdsOutput of [false, true]) {
  it(`a check's setsid child ends with the check${holdsOutput ? ", also one that holds its output open" : ""}`, async () => {
    const pidFile = path.join(dir, "child.pid");
    const check = path.join(dir, "check");
    const redirect = holdsOutput ? "" : " >/dev/null 2>&1 </dev/null";
    await writeFile(
      check,
      `#!/bin/sh\nsetsid sh -c 'echo $$ > ${pidFile}; exec sleep 30'${redirect} &\nsleep 0.3\necho judged\n`,
    );
    await chmod(check, 0o755);
    const started = Date.now();
    const outcome = await runCheck(check, dir, { PATH: process.env.PATH }, 20_000);
    const pid = Number(readFileSync(pidFile, "utf8"));
    strays.push(pid);
    expect(outcome).toMatchObject({ exitCode: 0, timedOut: false, output: "judged\n" });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await gone(pid)).toBe(true);
  }, 30_000);
}

it("the summary's pass rate is of the judged runs: an interrupted run is said apart, not counted", () => {
  const run = (repeat: number, status: RunRecord["status"]) => runRecord("c", repeat, status);
  const report = buildSuiteReport(
    {
      suite: "/s",
      model: "m",
      startedAt: new Date(0),
      finishedAt: new Date(1),
      concurrency: 1,
      repeat: 4,
      interrupted: true,
      cases: [{ name: "c", tags: [], minPassRate: 0.5 }],
    },
    [run(0, "passed"), run(1, "passed"), run(2, "failed"), run(3, "interrupted")],
  );
  expect(formatSummary(report).split("\n")[0]).toBe("PASS  c      67% of 3 (+1 interrupted)  (#2 failed and 1 more)");
});
