/**
 * New worker code with runs in flight (issue 55, item 4). Version 1 is the kill script; version 2
 * renames its `effect` tool to `record` (test/support/kill-script-v2.ts), so a run of version 1
 * replayed on version 2 diverges. Each bundle's version is the hash of its file (the default).
 *
 * - Workers of version 2 started beside those of version 1: the engine registers it as a new
 *   deployment, new runs go to it, a run in flight stays on version 1 and finishes there (its
 *   worker SIGKILLed on the way, to prove the retry too stays on its version), then version 1 is
 *   retired; `engineVersions` (what `status` shows) says each step.
 * - A run made to diverge (version 2's code under version 1's name, as an in-place overwrite did)
 *   retries for ever; `cancelRun` still ends it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { RunOutput } from "../src/agent-run.js";
import { cancelRun, engineQuery, engineVersions } from "../src/engine-client.js";
import { type Engine, startEngine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { runResult, submitRun } from "../src/submit.js";
import { spawnWorker } from "../src/worker-process.js";
import { Fleet, testBundle, versionsUntil } from "./support/fleet.js";
import { DONE } from "./support/kill-script.js";
import { markersFor } from "./support/markers.js";

const here = path.dirname(fileURLToPath(import.meta.url));

let root: string;
let v1: Awaited<ReturnType<typeof testBundle>> | undefined;
let v2: Awaited<ReturnType<typeof testBundle>> | undefined;
const fleets: Fleet[] = [];
const engines: Engine[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-versions-"));
  v1 = await testBundle(path.join(here, "support", "kill-script.ts"));
  v2 = await testBundle(path.join(here, "support", "kill-script-v2.ts"));
});

afterAll(async () => {
  for (const fleet of fleets) await fleet.stop();
  for (const engine of engines) await engine.stop();
  await v1?.remove();
  await v2?.remove();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

function fleetOf(bundle: () => string, version?: string): Fleet {
  const fleet = new Fleet((port, credential) =>
    spawnWorker({ bundle: bundle(), port, tmpdir: root, ...credential, ...(version !== undefined && { version }) }),
  );
  fleets.push(fleet);
  return fleet;
}

async function engineOn(name: string, ports: number[]): Promise<Engine> {
  const engine = await startEngine({
    dir: path.join(root, name),
    workers: ports.map((port) => `http://127.0.0.1:${port}`),
    watchMs: 100,
    log: () => undefined,
  });
  engines.push(engine);
  return engine;
}

function toolNames(output: RunOutput): string[] {
  return output.messages.flatMap((m) =>
    m.role === "assistant" ? m.content.flatMap((c) => (c.type === "toolCall" ? [c.name] : [])) : [],
  );
}

it("registers new code beside the old, keeps a run in flight on its version to the end, then retires the old", async () => {
  const [p1, p2] = [await freePort(), await freePort()];
  const engine = await engineOn("rollout", [p1, p2]);
  const old = fleetOf(() => v1!.file);
  const next = fleetOf(() => v2!.file);
  old.credential = next.credential = engine.workerCredential;
  await old.start(p1);
  const [first] = await versionsUntil(engine, (versions) => versions.length === 1);
  expect(first).toMatchObject({ state: "serving", runsInFlight: 0 });

  const marks = await markersFor(root, "rollout", (point) => point === "old.c0.before");
  const options = { markers: marks.markers, effects: path.join(root, "rollout-effects.log") };
  await submitRun(engine, "old", { setup: "kill-script", prompt: "go", options });
  const oldResult = runResult(engine, "old", AbortSignal.timeout(60_000));
  const heldBy = await marks.reach("old.c0.before");

  // new code beside the old: a new deployment; the old one drains
  await next.start(p2);
  const [draining, serving] = await versionsUntil(engine, (versions) => versions.length === 2);
  expect(draining).toEqual({ ...first, state: "draining", runsInFlight: 1 });
  expect(serving).toMatchObject({ state: "serving", runsInFlight: 0 });
  expect(serving!.version).not.toBe(first!.version);

  // a new run goes to the new code
  const fresh = await submitRun(engine, "new", { setup: "kill-script", prompt: "go", options }).then(() =>
    runResult(engine, "new", AbortSignal.timeout(30_000)),
  );
  expect(toolNames(fresh)).toEqual(["record", "peek", "peek", "record"]);

  // the old run's worker SIGKILLed: it is retried on the old version only, and ends there
  await old.killAndRestart(old.byPid(heldBy)!);
  const finished = await oldResult;
  expect(finished.errorMessage).toBeUndefined();
  expect(finished.messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: DONE }] });
  expect(toolNames(finished)).toEqual(["effect", "peek", "peek", "effect"]);
  marks.stop();

  // drained: retired, and not registered again while its (restarted) worker still answers
  expect(await versionsUntil(engine, (versions) => versions.length === 1)).toEqual([serving]);
  await new Promise((resolve) => setTimeout(resolve, 1000)); // ten looks of the engine at its workers
  expect(await engineVersions(engine)).toEqual([serving]);
  // its workers gone and started again: a rollback, registered as the newest (and the newer code, drained, retired)
  for (const worker of old.workers) if (old.alive(worker)) worker.child.kill("SIGKILL");
  await new Promise((resolve) => setTimeout(resolve, 500));
  await old.start(p1);
  const rolledBack = await versionsUntil(engine, (versions) => versions.every((v) => v.version === first!.version));
  expect(rolledBack).toEqual([{ ...first, deploymentId: expect.not.stringMatching(first!.deploymentId) }]);
}, 90_000);

it("cancels a run stuck in replay (its journal does not match the code)", async () => {
  const port = await freePort();
  const engine = await engineOn("stuck", [port]);
  // the same version name on other code: what re-registering in place did
  const before = fleetOf(() => v1!.file, "same");
  const after = fleetOf(() => v2!.file, "same");
  before.credential = after.credential = engine.workerCredential;
  await before.start(port);
  await versionsUntil(engine, (versions) => versions.length === 1);
  const marks = await markersFor(root, "stuck", (point) => point === "stuck.c0.before");
  const options = { markers: marks.markers, effects: path.join(root, "stuck-effects.log") };
  const invocationId = await submitRun(engine, "stuck", { setup: "kill-script", prompt: "go", options });
  const result = runResult(engine, "stuck", AbortSignal.timeout(60_000)).then(
    (output) => ({ output }),
    (error: Error) => ({ error: error.message }),
  );
  const pid = await marks.reach("stuck.c0.before");
  before.workers.find((w) => w.pid === pid)!.child.kill("SIGKILL");
  await after.start(port);
  // it replays on the other code, which diverges, again and again
  for (;;) {
    const [row] = await engineQuery(
      engine,
      "SELECT retry_count, last_failure FROM sys_invocation WHERE target_service_key = 'stuck'",
    );
    if (Number(row?.retry_count) >= 3 && String(row?.last_failure ?? "") !== "") break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const cancelled = await cancelRun(engine, "stuck", { graceMs: 2000 });
  expect(cancelled).toMatchObject({ invocationId, outcome: "killed" });
  expect(cancelled.lastFailure).toMatch(/journal mismatch|RT0016|differ/i);
  expect(await result).toEqual({ error: expect.stringMatching(/killed|aborted|cancel/i) });
  marks.stop();
}, 60_000);
