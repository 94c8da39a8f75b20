/**
 * The adopter's fault scenario of issue 55, each fault by real SIGKILL, and each run finishing
 * with nobody stepping in:
 *
 * - every worker away for longer than the old retry policy lasted (it paused a run for good after
 *   100 attempts, ~105 s at its 1 s cap; here the cap is 100 ms, so the same policy gave up after
 *   about 10 s, and the workers stay away 1.5 times that and past 100 attempts);
 * - the engine process SIGKILLed mid-run and started again: same address, same credential, same
 *   deployment, the client's wait goes on, its Restate server ended with it;
 * - the Restate server SIGKILLed mid-run: the engine starts it again; one that keeps dying (here
 *   `--max-restarts 1`: killed twice) makes the `engine` command exit 1 saying what to do.
 *
 * The kill script's kill points hold a run where the test wants it (test/support/kill-script.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunOutput } from "../src/agent-run.js";
import { engineQuery, engineVersions, readConnection, sqlText } from "../src/engine-client.js";
import type { Engine } from "../src/engine.js";
import { readWorkerCredential } from "../src/identity.js";
import { freePort } from "../src/restate-server.js";
import { runResult, submitRun } from "../src/submit.js";
import { spawnWorker } from "../src/worker-process.js";
import { engineWithFleet, Fleet, testBundle, versionsUntil } from "./support/fleet.js";
import { DONE } from "./support/kill-script.js";
import { markersFor } from "./support/markers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE = path.resolve(here, "..");
const SETUPS = path.join(here, "support", "kill-script.ts");

let root: string;
let bundle: Awaited<ReturnType<typeof testBundle>> | undefined;
const fleets: Fleet[] = [];
const engines: Engine[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-faults-"));
  bundle = await testBundle(SETUPS);
});

afterAll(async () => {
  for (const fleet of fleets) await fleet.stop();
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  // the Restate server of an engine process killed here outlives it (the next engine on its folder would end it)
  const left = Number(await readFile(path.join(root, "restarted", "restate.pid"), "utf8").catch(() => "0"));
  if (left > 0 && running(left)) process.kill(left, "SIGKILL");
  for (const engine of engines) await engine.stop();
  await bundle?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

/** A fleet of bundled kill-script workers (`retryMaxMs`: the engine's longest wait between retries). */
function fleetOf(retryMaxMs?: number): Fleet {
  const fleet = new Fleet((port, credential) =>
    spawnWorker({
      bundle: bundle!.file,
      port,
      tmpdir: root,
      ...credential,
      ...(retryMaxMs !== undefined && { retryMaxMs }),
    }),
  );
  fleets.push(fleet);
  return fleet;
}

/** Whether `pid` runs (a zombie, dead but not yet reaped by init, does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function expectDone(output: RunOutput): void {
  expect(output.errorMessage).toBeUndefined();
  const last = output.messages.at(-1)!;
  expect(last.role === "assistant" && last.content).toEqual([{ type: "text", text: DONE }]);
}

/** How long the old policy (`maxAttempts` 100, then pause) retried with these waits, in ms. */
function oldPolicyLasted(initialMs: number, maxMs: number): number {
  let total = 0;
  for (let attempt = 1; attempt < 100; attempt++) total += Math.min(initialMs * 2 ** (attempt - 1), maxMs);
  return total;
}

async function invocationOf(engine: Engine, runId: string) {
  const [row] = await engineQuery(
    engine,
    `SELECT status, retry_count, last_failure FROM sys_invocation WHERE target_service_key = ${sqlText(runId)}`,
  );
  return row as { status: string; retry_count: number; last_failure: string | null };
}

describe("runs that never stall", () => {
  it("waits out every worker being away longer than the old limit, and goes on when one comes back", async () => {
    const retryMaxMs = 100;
    const oldLimitMs = oldPolicyLasted(50, retryMaxMs); // 9.85 s: the old ~105 s at a tenth of the cap
    const fleet = fleetOf(retryMaxMs);
    const ports = [await freePort(), await freePort()];
    const engine = await engineWithFleet(fleet, path.join(root, "away"), ports);
    engines.push(engine);
    const marks = await markersFor(root, "away", (point) => point === "away.c0.before");
    const effects = path.join(root, "away-effects.log");
    await submitRun(engine, "away", {
      setup: "kill-script",
      prompt: "go",
      options: { markers: marks.markers, effects },
    });
    const result = runResult(engine, "away", AbortSignal.timeout(120_000));
    await marks.reach("away.c0.before");
    // every worker SIGKILLed; none is started again for a while
    for (const worker of fleet.workers) worker.child.kill("SIGKILL");
    await Promise.all(fleet.workers.map((w) => new Promise((resolve) => w.child.once("exit", resolve))));
    const away = Date.now();
    let seen = await invocationOf(engine, "away");
    while (Date.now() - away < 1.5 * oldLimitMs || seen.retry_count <= 100) {
      expect(seen.status, "the run never pauses").not.toBe("paused");
      await new Promise((resolve) => setTimeout(resolve, 250));
      seen = await invocationOf(engine, "away");
    }
    const awayMs = Date.now() - away;
    // between two attempts, or in one (the engine asking the proxy, which has no worker)
    expect(["backing-off", "running"]).toContain(seen.status);
    expect(seen.retry_count).toBeGreaterThan(100);
    console.info(
      `all workers away ${(awayMs / 1000).toFixed(1)} s (the old policy paused after ${(oldLimitMs / 1000).toFixed(2)} s at this cap), ${seen.retry_count} attempts`,
    );
    // one worker back: the run goes on by itself
    marks.go("away.c0.before");
    await fleet.start(ports[0]!);
    expectDone(await result);
    marks.stop();
  }, 150_000);
});

describe("the engine restarted", () => {
  /** Starts `pi-course-restate engine` as a process of its own; resolves once it printed its address. */
  async function engineProcess(dir: string, workers: string[]): Promise<{ child: ChildProcess; stderr: () => string }> {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli.ts", "engine", "--dir", dir, "--workers", workers.join(","), "--max-restarts", "1"],
      { cwd: PACKAGE, stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(child);
    let stderr = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      stderr += chunk;
    });
    let stdout = "";
    child.stdout!.setEncoding("utf8");
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: string) => {
        stdout += chunk;
        if (stdout.includes("engine: ")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`the engine exited (${code}) before it listened: ${stderr}`)));
    });
    return { child, stderr: () => stderr };
  }

  it("keeps its address, credential and deployment across a SIGKILL, its Restate server ends with it, and the run goes on", async () => {
    const dir = path.join(root, "restarted");
    const port = await freePort();
    const first = await engineProcess(dir, [`http://127.0.0.1:${port}`]);
    const engine = await readConnection(dir);
    const fleet = fleetOf();
    fleet.credential = readWorkerCredential(path.join(dir, "identity-keys"));
    await fleet.start(port);
    const [deployment] = await versionsUntil(engine, (versions) => versions.length === 1);
    const marks = await markersFor(root, "restarted", (point) => point === "restarted.c0.before");
    const effects = path.join(root, "restarted-effects.log");
    await submitRun(engine, "restarted", {
      setup: "kill-script",
      prompt: "go",
      options: { markers: marks.markers, effects },
    });
    // the client waits through the restart
    const result = runResult(engine, "restarted", AbortSignal.timeout(120_000));
    await marks.reach("restarted.c0.before");
    const leftPid = Number(await readFile(path.join(dir, "restate.pid"), "utf8"));
    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    // the server dies with its engine (setpriv's parent-death signal): nothing is left sending runs
    // to the proxy's port, which anyone may take while no engine holds it (a hang bound, not a speed)
    for (const deadline = Date.now() + 60_000; running(leftPid) && Date.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running(leftPid), "the Restate server ends with its SIGKILLed engine").toBe(false);

    const second = await engineProcess(dir, [`http://127.0.0.1:${port}`]);
    expect(await readConnection(dir)).toEqual(engine);
    await marks.go("restarted.c0.before");
    expectDone(await result);
    expect(await engineVersions(engine)).toEqual([{ ...deployment, state: "serving", runsInFlight: 0 }]);
    marks.stop();

    // a Restate server that keeps dying: the engine gives up, exits 1 and says what to do
    const exited = new Promise<number | null>((resolve) => second.child.once("exit", resolve));
    let pid = 0;
    for (let kills = 0; kills < 2; kills++) {
      for (;;) {
        const now = Number(await readFile(path.join(dir, "restate.pid"), "utf8").catch(() => "0"));
        if (now !== pid && now > 0 && running(now)) {
          pid = now;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // killed only once it answers: a server killed while starting fails the restart itself
      while (
        !(await engineVersions(engine).then(
          () => true,
          () => false,
        ))
      )
        await new Promise((resolve) => setTimeout(resolve, 20));
      // the second kill lands once the engine's restart has settled (a kill while it is still starting fails the
      // restart itself, with another message): its "is back" line is that point
      while (kills > 0 && !second.stderr().includes("the Restate server is back"))
        await new Promise((resolve) => setTimeout(resolve, 20));
      process.kill(pid, "SIGKILL");
    }
    expect(await exited).toBe(1);
    expect(second.stderr()).toContain("the Restate server exited (SIGKILL); starting it again on the same data");
    expect(second.stderr()).toMatch(
      /the Restate server exited \(SIGKILL\) 2 times within a minute: [\s\S]*then start `pi-course-restate engine --dir .*` again: runs in flight go on from their journals\.\n$/,
    );
  }, 180_000);

  it("starts a SIGKILLed Restate server again by itself, and the run goes on", async () => {
    const fleet = fleetOf();
    const engine = await engineWithFleet(fleet, path.join(root, "server-killed"), [await freePort()]);
    engines.push(engine);
    const marks = await markersFor(root, "server-killed", (point) => point === "server-killed.c0.before");
    const effects = path.join(root, "server-killed-effects.log");
    await submitRun(engine, "server-killed", {
      setup: "kill-script",
      prompt: "go",
      options: { markers: marks.markers, effects },
    });
    const result = runResult(engine, "server-killed", AbortSignal.timeout(60_000));
    await marks.reach("server-killed.c0.before");
    const killed = engine.server();
    killed.process.kill("SIGKILL");
    await killed.exited;
    while (engine.server() === killed) await new Promise((resolve) => setTimeout(resolve, 20));
    await marks.go("server-killed.c0.before");
    expectDone(await result);
    expect(engine.server().process.pid).not.toBe(killed.process.pid);
    marks.stop();
  }, 90_000);
});
