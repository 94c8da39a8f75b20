/**
 * Runs as an operator sees them, against a real engine and a bundled worker of `ops-setups.ts`:
 * `runStatus` (state, current step, attempts, last failure), `listRuns`, `cancelRun`, `runResult`;
 * the same run id with other input refused by name; the per-step and per-run time limits; errors
 * that name the address they could not reach.
 *
 * Waits are on files and states the run reaches (the test's own timeout is the hang bound), never
 * on a guess of how long the machine takes.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cancelRun } from "../src/engine-client.js";
import type { Engine } from "../src/engine.js";
import { freePort } from "../src/restate-server.js";
import { listRuns, type RunStatus, runStatus } from "../src/runs.js";
import { RunInputMismatchError, runResult, submitRun } from "../src/submit.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { type EngineAndWorker, engineAndWorker } from "./support/fleet.js";

const SETUPS = path.join(path.dirname(fileURLToPath(import.meta.url)), "support", "ops-setups.ts");

let root: string;
let engine: Engine;
let worker: WorkerProcess;
let started: EngineAndWorker | undefined;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-runs-"));
  started = await engineAndWorker(path.join(root, "restate"), { setups: SETUPS });
  ({ engine, worker } = started);
});

afterAll(async () => {
  await started?.stop();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

const hold = (prompt = "go", extra: object = {}) => ({ setup: "hold", prompt, options: { dir: root }, ...extra });

/** Resolves once `file` (in the test's folder) exists. */
async function until(file: string): Promise<void> {
  while (!existsSync(path.join(root, file))) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Resolves with the run's status once `test` holds for it. */
async function statusWhen(runId: string, test: (status: RunStatus) => boolean): Promise<RunStatus> {
  for (;;) {
    const status = await runStatus(engine, runId);
    if (status !== undefined && test(status)) return status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it("status says a run is running at its step; list has it; result waits for its answer; status then says succeeded", async () => {
  await submitRun(engine, "held", hold());
  await until("held.waiting");
  const running = await statusWhen("held", (s) => s.step?.name === "c1 result");
  expect(running).toMatchObject({
    runId: "held",
    workflow: "AgentRun",
    state: "running",
    step: { name: "c1 result", done: false },
    steps: 3, // turn 0, c1 intent, c1 result
  });
  expect(running.invocationId).toMatch(/^inv_/);
  expect(running.outcome).toBeUndefined();
  expect((await listRuns(engine)).map((run) => [run.runId, run.state])).toContainEqual(["held", "running"]);

  const answer = runResult(engine, "held");
  await writeFile(path.join(root, "held.go"), "");
  const output = await answer;
  expect(output.messages.at(-1)).toMatchObject({
    role: "assistant",
    content: [{ type: "text", text: "released: went" }],
  });
  expect(await runStatus(engine, "held")).toMatchObject({
    state: "completed",
    outcome: "succeeded",
    step: { name: "turn 1", done: true },
    steps: 4,
  });
}, 120_000);

it("the same run id with the same input is the same run; with other input it is refused by name", async () => {
  const first = await submitRun(engine, "twice", hold("the first prompt"));
  expect(await submitRun(engine, "twice", hold("the first prompt"))).toBe(first);
  const other = submitRun(engine, "twice", hold("another prompt"));
  await expect(other).rejects.toBeInstanceOf(RunInputMismatchError);
  await expect(other).rejects.toThrow(
    "run twice already exists with other input (another setup, prompt, options or limits); a run id names one run: " +
      "submit under a new --id, or read that run with `pi-course-restate result twice`",
  );
  // other limits are other input too
  await expect(submitRun(engine, "twice", hold("the first prompt", { limits: { stepSeconds: 5 } }))).rejects.toThrow(
    RunInputMismatchError,
  );
  await writeFile(path.join(root, "twice.go"), "");
  expect((await runResult(engine, "twice")).errorMessage).toBeUndefined();
}, 120_000);

it("cancel ends a running run failed with the engine's cancellation; a run that ended or never was is said so", async () => {
  await submitRun(engine, "stopped", hold());
  await until("stopped.waiting");
  const statusBefore = await runStatus(engine, "stopped");
  expect(statusBefore?.state).toBe("running");
  const was = await cancelRun(engine, "stopped");
  expect(was).toEqual({ invocationId: statusBefore!.invocationId, outcome: "cancelled" });
  await expect(runResult(engine, "stopped")).rejects.toThrow(/^run stopped failed: .*cancel/i);
  expect(await statusWhen("stopped", (s) => s.state === "completed")).toMatchObject({ outcome: "failed" });
  expect(await cancelRun(engine, "stopped")).toEqual({ invocationId: statusBefore!.invocationId, outcome: "ended" });
  await expect(cancelRun(engine, "nope")).rejects.toThrow(
    `no run nope of AgentRun on the engine at ${engine.url}: \`pi-course-restate list\` shows the runs there`,
  );
  expect(await runStatus(engine, "nope")).toBeUndefined();
  await expect(runResult(engine, "nope")).rejects.toThrow(
    `no run nope on the engine at ${engine.url}: check the id (\`pi-course-restate list\` shows the runs there)`,
  );
}, 120_000);

it("a step past its time limit is cut and recorded as the call's error; the run goes on", async () => {
  await submitRun(engine, "slow-step", hold("go", { options: { dir: root, stall: true }, limits: { stepSeconds: 1 } }));
  const output = await runResult(engine, "slow-step");
  expect(output.errorMessage).toBeUndefined();
  const result = output.messages.find((m) => m.role === "toolResult");
  expect(result).toMatchObject({
    isError: true,
    content: [{ type: "text", text: 'step "c1 result" did not finish within 1 s (the step time limit)' }],
  });
  expect(output.messages.at(-1)).toMatchObject({
    role: "assistant",
    content: [{ type: "text", text: 'released: step "c1 result" did not finish within 1 s (the step time limit)' }],
  });
}, 120_000);

it("a run past its time limit fails for good, saying which run and limit", async () => {
  await submitRun(engine, "slow-run", hold("go", { options: { dir: root, stall: true }, limits: { runSeconds: 2 } }));
  await expect(runResult(engine, "slow-run")).rejects.toThrow(
    'run slow-run failed: run slow-run passed its time limit of 2 s; it stopped before step "turn 1"',
  );
  expect(await runStatus(engine, "slow-run")).toMatchObject({ state: "completed", outcome: "failed" });
}, 120_000);

it("errors name the address they could not reach and what to do", async () => {
  const closed = { url: `http://127.0.0.1:${await freePort()}`, token: engine.token };
  const hint = "is `pi-course-restate engine` running with that folder? If it is restarting, try again in a moment.";
  await expect(submitRun(closed, "x", hold())).rejects.toThrow(
    `cannot reach the engine at ${closed.url} (ECONNREFUSED): ${hint}`,
  );
  await expect(runStatus(closed, "x")).rejects.toThrow(
    `cannot reach the engine at ${closed.url} (ECONNREFUSED): ${hint}`,
  );
}, 60_000);

it("a run whose worker is away backs off: status counts the attempts and says the last failure; it ends once a worker is back", async () => {
  const port = worker.port;
  await worker.stop(0);
  await submitRun(engine, "away", hold());
  const waiting = await statusWhen("away", (s) => s.attempts >= 2 && s.lastFailure !== undefined);
  expect(waiting.state).toMatch(/^(backing-off|running|ready)$/);
  expect(waiting.lastFailure).toMatch(/connect|refused|unavailable|error/i);
  started!.worker = worker = await spawnWorker({ bundle: started!.bundle, port, ...engine.workerCredential });
  await until("away.waiting");
  await writeFile(path.join(root, "away.go"), "");
  expect((await runResult(engine, "away")).errorMessage).toBeUndefined();
}, 120_000);
