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
import { freePort, type RestateServer } from "../src/restate-server.js";
import { cancelRun, listRuns, type RunStatus, runStatus } from "../src/runs.js";
import { RunInputMismatchError, runResult, submitRun } from "../src/submit.js";
import { spawnWorker, type WorkerProcess } from "../src/worker-process.js";
import { type EngineAndWorker, engineAndWorker } from "./support/fleet.js";

const SETUPS = path.join(path.dirname(fileURLToPath(import.meta.url)), "support", "ops-setups.ts");

let root: string;
let server: RestateServer;
let worker: WorkerProcess;
let engine: EngineAndWorker | undefined;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pi-restate-runs-"));
  engine = await engineAndWorker(path.join(root, "restate"), { setups: SETUPS });
  ({ server, worker } = engine);
});

afterAll(async () => {
  await engine?.stop();
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
    const status = await runStatus(server.adminUrl, runId);
    if (status !== undefined && test(status)) return status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it("status says a run is running at its step; list has it; result waits for its answer; status then says succeeded", async () => {
  await submitRun(server.ingressUrl, "held", hold());
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
  expect((await listRuns(server.adminUrl)).map((run) => [run.runId, run.state])).toContainEqual(["held", "running"]);

  const answer = runResult(server.ingressUrl, "held");
  await writeFile(path.join(root, "held.go"), "");
  const output = await answer;
  expect(output.messages.at(-1)).toMatchObject({
    role: "assistant",
    content: [{ type: "text", text: "released: went" }],
  });
  expect(await runStatus(server.adminUrl, "held")).toMatchObject({
    state: "completed",
    outcome: "succeeded",
    step: { name: "turn 1", done: true },
    steps: 4,
  });
}, 120_000);

it("the same run id with the same input is the same run; with other input it is refused by name", async () => {
  const first = await submitRun(server.ingressUrl, "twice", hold("the first prompt"));
  expect(await submitRun(server.ingressUrl, "twice", hold("the first prompt"))).toBe(first);
  const other = submitRun(server.ingressUrl, "twice", hold("another prompt"));
  await expect(other).rejects.toBeInstanceOf(RunInputMismatchError);
  await expect(other).rejects.toThrow(
    "run twice already exists with other input (another setup, prompt, options or limits); a run id names one run: " +
      "submit under a new --id, or read that run with `pi-course-restate result twice`",
  );
  // other limits are other input too
  await expect(
    submitRun(server.ingressUrl, "twice", hold("the first prompt", { limits: { stepSeconds: 5 } })),
  ).rejects.toThrow(RunInputMismatchError);
  await writeFile(path.join(root, "twice.go"), "");
  expect((await runResult(server.ingressUrl, "twice")).errorMessage).toBeUndefined();
}, 120_000);

it("cancel ends a running run failed with the engine's cancellation; a run that ended or never was is said so", async () => {
  await submitRun(server.ingressUrl, "stopped", hold());
  await until("stopped.waiting");
  const was = await cancelRun(server.adminUrl, "stopped");
  expect(was.state).toBe("running");
  await expect(runResult(server.ingressUrl, "stopped")).rejects.toThrow(/^run stopped failed: .*cancel/i);
  expect(await statusWhen("stopped", (s) => s.state === "completed")).toMatchObject({ outcome: "failed" });
  await expect(cancelRun(server.adminUrl, "stopped")).rejects.toThrow(
    "run stopped has already ended (failed); nothing to cancel",
  );
  await expect(cancelRun(server.adminUrl, "nope")).rejects.toThrow(
    `no run nope on the engine at ${server.adminUrl}: \`pi-course-restate list\` shows the runs there`,
  );
  expect(await runStatus(server.adminUrl, "nope")).toBeUndefined();
  await expect(runResult(server.ingressUrl, "nope")).rejects.toThrow(
    `no run nope on the engine at ${server.ingressUrl}: check the id (\`pi-course-restate list\` shows the runs there)`,
  );
}, 120_000);

it("a step past its time limit is cut and recorded as the call's error; the run goes on", async () => {
  await submitRun(
    server.ingressUrl,
    "slow-step",
    hold("go", { options: { dir: root, stall: true }, limits: { stepSeconds: 1 } }),
  );
  const output = await runResult(server.ingressUrl, "slow-step");
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
  await submitRun(
    server.ingressUrl,
    "slow-run",
    hold("go", { options: { dir: root, stall: true }, limits: { runSeconds: 2 } }),
  );
  await expect(runResult(server.ingressUrl, "slow-run")).rejects.toThrow(
    'run slow-run failed: run slow-run passed its time limit of 2 s; it stopped before step "turn 1"',
  );
  expect(await runStatus(server.adminUrl, "slow-run")).toMatchObject({ state: "completed", outcome: "failed" });
}, 120_000);

it("errors name the address they could not reach and what to do", async () => {
  const closed = `http://127.0.0.1:${await freePort()}`;
  const hint =
    "Is the engine running there? `pi-course-restate engine` prints its ingress and admin URLs when it starts";
  await expect(submitRun(closed, "x", hold())).rejects.toThrow(
    `cannot reach the engine's ingress at ${closed} (ECONNREFUSED). ${hint}; pass that URL as --ingress.`,
  );
  await expect(runStatus(closed, "x")).rejects.toThrow(
    `cannot reach the engine's admin at ${closed} (ECONNREFUSED). ${hint}; pass that URL as --admin.`,
  );
}, 60_000);

it("a run whose worker is away backs off: status counts the attempts and says the last failure; it ends once a worker is back", async () => {
  const port = worker.port;
  await worker.stop(0);
  await submitRun(server.ingressUrl, "away", hold());
  const waiting = await statusWhen("away", (s) => s.attempts >= 2 && s.lastFailure !== undefined);
  expect(waiting.state).toMatch(/^(backing-off|running|ready)$/);
  expect(waiting.lastFailure).toMatch(/connect|refused|unavailable|error/i);
  engine!.worker = worker = await spawnWorker({ bundle: engine!.bundle, port });
  await until("away.waiting");
  await writeFile(path.join(root, "away.go"), "");
  expect((await runResult(server.ingressUrl, "away")).errorMessage).toBeUndefined();
}, 120_000);
