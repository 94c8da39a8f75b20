/**
 * An eval suite across workers: a Restate server, two worker processes (each with its own TMPDIR,
 * as if on machines of their own), and a suite of offline cases whose check waits at a kill point
 * (a marker file `<case>.<check pid>@<worker pid>`, then `<case>.<check pid>.go`). The worker
 * running a case's check is SIGKILLed (with the check's process group) at the first and the fourth
 * check to arrive from a live worker, and started again on its port.
 *
 * Checks: the report of `pi-course eval` comes out (report.json with every case × repeat exactly
 * once, all passed; report.html; each run's session file), although killed cases ran again on a
 * worker that lived; and the killed cases did run more than once (so the kills landed mid-case).
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { SessionFile, type SuiteReport } from "@pi/course";
import { afterAll, beforeAll, expect, it } from "vitest";
import { evalOnEngine } from "../src/eval-suite.js";
import type { Engine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { spawnWorker } from "../src/worker-process.js";
import { Fleet, engineWithFleet, testBundle } from "./support/fleet.js";

const CASES = ["alpha", "beta", "gamma", "delta"];
const REPEAT = 2;
/** The checks (counted as they arrive on live workers) at which the worker running it is killed. */
const KILL_AT = new Set([1, 4]);

let root: string;
let markers: string;
let engine: Engine | undefined;
const seen = new Set<string>();
/** The checks judged on a live worker, in order (a dead worker's check, started just before its kill, does not count). */
let live = 0;
const kills: { case: string; pid: number }[] = [];
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
const fleet = new Fleet((port, credential) =>
  // no tmpdir: each worker makes its own (two sharing one turned cases into false protocol failures)
  spawnWorker({ bundle: bundle!.file, port, cases: 2, ...credential, suites: [path.join(root, "suite")] }),
);

async function judge(): Promise<void> {
  for (const file of await readdir(markers)) {
    if (file.endsWith(".go") || seen.has(file)) continue;
    const [name, workerPid] = file.split("@") as [string, string];
    const [caseName, checkPid] = name.split(".") as [string, string];
    const worker = fleet.byPid(Number(workerPid));
    // a replacement worker can take a case before its start has been recorded: judge the check once it is
    if (worker === undefined) continue;
    seen.add(file);
    if (fleet.alive(worker) && KILL_AT.has(++live)) {
      kills.push({ case: caseName, pid: worker.pid });
      await fleet.killAndRestart(worker, () => {
        try {
          process.kill(-Number(checkPid), "SIGKILL"); // the check's group: the machine went down with it
        } catch {
          // it had ended
        }
      });
    } else {
      await writeFile(path.join(markers, `${name}.go`), "");
    }
  }
}

/** A case whose check waits at its kill point, then passes. */
async function writeCase(suite: string, name: string): Promise<void> {
  const dir = path.join(suite, name);
  await mkdir(path.join(dir, "files"), { recursive: true });
  await writeFile(path.join(dir, "files", "note.txt"), `${name}\n`);
  await writeFile(path.join(dir, "task.md"), `Read note.txt and say what it holds.\n`);
  const script = {
    turns: [
      { text: "Reading it.", toolCalls: [{ name: "read", arguments: { path: "note.txt" } }] },
      { text: `It holds ${name}.` },
    ],
  };
  await writeFile(path.join(dir, "script.json"), `${JSON.stringify(script)}\n`);
  await writeFile(path.join(dir, "case.json"), `${JSON.stringify({ timeLimitSeconds: 30, maxTurns: 4 })}\n`);
  const check = path.join(dir, "check");
  await writeFile(
    check,
    [
      "#!/bin/sh",
      `: > "${markers}/${name}.$$@$PPID"`,
      // waits 20 s at most: a check whose test died must not wait forever
      "n=0",
      `while [ ! -e "${markers}/${name}.$$.go" ]; do n=$((n + 1)); [ $n -gt 2000 ] && exit 1; sleep 0.01; done`,
      `grep -q ${name} note.txt`,
      "",
    ].join("\n"),
  );
  await chmod(check, 0o755);
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-eval-"));
  markers = path.join(root, "markers");
  await mkdir(markers);
  bundle = await testBundle();
  const ports = [await freePort(), await freePort()];
  for (const port of ports) await mkdir(path.join(root, `tmp-${port}`));
  await mkdir(path.join(root, "suite")); // the workers' one suite folder (--suites)
  engine = await engineWithFleet(fleet, path.join(root, "restate"), ports);
  fleet.watch(judge);
});

afterAll(async () => {
  await fleet.stop();
  for (const file of seen) {
    try {
      process.kill(-Number(file.split("@")[0]!.split(".")[1]), "SIGKILL"); // a check still waiting
    } catch {
      // it had ended
    }
  }
  await engine?.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

it("runs every case × repeat once across workers killed mid-case, and writes pi-course eval's reports", async () => {
  const suite = path.join(root, "suite");
  for (const name of CASES) await writeCase(suite, name);
  const out = path.join(root, "out");
  const result = await evalOnEngine({ suite, engine: engine!, repeat: REPEAT, out });
  expect(kills).toHaveLength(2);

  const report = JSON.parse(await readFile(path.join(out, "report.json"), "utf8")) as SuiteReport;
  expect(report.cases.map((c) => c.name).sort()).toEqual([...CASES].sort());
  for (const entry of report.cases) {
    expect(entry.runs.map((r) => r.repeat).sort()).toEqual([0, 1]);
    for (const run of entry.runs) {
      expect(run.status, `${run.case} #${run.repeat}: ${run.reason}`).toBe("passed");
      const session = await SessionFile.open(run.sessionFile!, { readOnly: true });
      expect(session.entries().some((e) => e.type === "message")).toBe(true);
      await session.close();
    }
  }
  expect(result.exitCode).toBe(0);
  const html = await readFile(path.join(out, "report.html"), "utf8");
  for (const name of CASES) expect(html).toContain(`It holds ${name}.`);

  // each killed case's check ran again after the kill (on a live worker)
  for (const kill of kills) {
    const checks = [...seen].filter((file) => file.startsWith(`${kill.case}.`));
    expect(checks.length).toBeGreaterThan(REPEAT);
    expect(checks.some((file) => Number(file.split("@")[1]) !== kill.pid)).toBe(true);
  }
}, 180_000); // a bound that tells a hang, not a slow machine: a loaded CI run took past 45 s
